// Tests for the response builders: vLLM's key order, whole bodies of a chat completion, a chunk
// stream and a text completion, logprob shapes, the g4 degeneracy field, the small endpoints,
// the SSE framing, invalid UTF-8 dumped without throwing, and request ids.
#include "server/openai/response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace g4::openai {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::vector<std::string> Keys(const ojson& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

ResponseMeta Meta(const std::string& id) { return {id, 1700000000, "gemma-4-e2b", ""}; }

TEST(ResponseTest, ChatCompletionWholeBody) {
  Choice choice;
  choice.text = "Hello!";
  choice.finish_reason = "stop";
  const ojson body = ChatCompletion(Meta("chatcmpl-1"), choice, Usage(12, 3), {});
  EXPECT_EQ(Dump(body),
            R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,)"
            R"("model":"gemma-4-e2b","choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":"Hello!"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],)"
            R"("usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3,)"
            R"("prompt_tokens_details":{"cached_tokens":0}},)"
            R"("g4":{"degenerate":false}})");
}

TEST(ResponseTest, ChatCompletionWithReasoningFingerprintAndVerdict) {
  Choice choice;
  choice.text = "42";
  choice.reasoning = "6 * 7";
  choice.finish_reason = "length";
  choice.stop_reason = 106;
  ResponseMeta meta = Meta("chatcmpl-2");
  meta.system_fingerprint = "g4-e2b-bf16";
  DegeneracyVerdict verdict;
  verdict.degenerate = true;
  verdict.reason = "token 464 repeated 32 times";
  verdict.start = 17;
  const ojson body = ChatCompletion(meta, choice, Usage(5, 40), verdict);
  EXPECT_THAT(Keys(body), ElementsAre("id", "object", "created", "model", "choices",
                                      "system_fingerprint", "usage", "g4"));
  const ojson& message = body["choices"][0]["message"];
  EXPECT_THAT(Keys(message), ElementsAre("role", "content", "reasoning_content", "reasoning"));
  EXPECT_EQ(message["reasoning_content"], "6 * 7");
  EXPECT_EQ(message["reasoning"], "6 * 7");
  EXPECT_EQ(message["content"], "42");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["choices"][0]["stop_reason"], 106);
  EXPECT_EQ(body["system_fingerprint"], "g4-e2b-bf16");
  EXPECT_EQ(Dump(body["g4"]),
            R"({"degenerate":true,"reason":"token 464 repeated 32 times","start":17})");
}

TEST(ResponseTest, ChatCompletionWithToolCalls) {
  Choice choice;
  choice.tool_calls.push_back({"call_1", "get_weather", R"({"city":"Paris"})"});
  choice.finish_reason = "tool_calls";
  const ojson body = ChatCompletion(Meta("chatcmpl-t"), choice, Usage(9, 12), {});
  EXPECT_EQ(Dump(body["choices"][0]["message"]),
            R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1",)"
            R"("type":"function","function":{"name":"get_weather",)"
            R"("arguments":"{\"city\":\"Paris\"}"}}]})")
      << "content is null when the answer is only calls; arguments is a JSON string";
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  choice.text = "Checking.";
  EXPECT_EQ(ChatCompletion(Meta("chatcmpl-t"), choice, Usage(9, 12), {})["choices"][0]
                ["message"]["content"],
            "Checking.");
}

TEST(ResponseTest, ChatChunkToolCallDeltas) {
  Chunk open;
  open.tool_calls.push_back({0, "call_1", "now", ""});
  EXPECT_EQ(Dump(ChatChunk(Meta("chatcmpl-d"), open)["choices"][0]["delta"]),
            R"({"tool_calls":[{"index":0,"id":"call_1","type":"function",)"
            R"("function":{"name":"now","arguments":""}}]})");
  Chunk args;
  args.tool_calls.push_back({0, std::nullopt, std::nullopt, "{}"});
  EXPECT_EQ(Dump(ChatChunk(Meta("chatcmpl-d"), args)["choices"][0]["delta"]),
            R"({"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]})");
}

TEST(ResponseTest, ChatChunkStream) {
  const ResponseMeta meta = Meta("chatcmpl-3");
  Chunk first;
  first.role = true;
  first.text = "";
  first.usage_null = true;
  EXPECT_EQ(Dump(ChatChunk(meta, first)),
            R"({"id":"chatcmpl-3","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"gemma-4-e2b","choices":[{"index":0,"delta":{"role":"assistant",)"
            R"("content":""},"logprobs":null,"finish_reason":null}],"usage":null})");

  Chunk thought;
  thought.reasoning = "hmm";
  EXPECT_EQ(Dump(ChatChunk(meta, thought)["choices"][0]["delta"]),
            R"({"reasoning_content":"hmm","reasoning":"hmm"})");

  Chunk last;
  last.finish_reason = "stop";
  last.verdict = DegeneracyVerdict{};
  const ojson end = ChatChunk(meta, last);
  EXPECT_TRUE(end["choices"][0]["delta"].empty()) << "the finishing chunk has an empty delta";
  EXPECT_EQ(end["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(end["choices"][0]["stop_reason"].is_null());
  EXPECT_FALSE(end.contains("usage")) << "usage only when include_usage asked for it";
  EXPECT_EQ(end["g4"]["degenerate"], false);

  const ojson usage = UsageChunk(meta, "chat.completion.chunk", Usage(10, 4, 6));
  EXPECT_EQ(Dump(usage),
            R"({"id":"chatcmpl-3","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"gemma-4-e2b","choices":[],)"
            R"("usage":{"prompt_tokens":10,"total_tokens":14,"completion_tokens":4,)"
            R"("prompt_tokens_details":{"cached_tokens":6}}})");
}

TEST(ResponseTest, TextCompletionAndChunk) {
  Choice choice;
  choice.text = " there was";
  choice.finish_reason = "length";
  const ojson body = TextCompletion(Meta("cmpl-1"), choice, Usage(4, 16), {});
  EXPECT_EQ(Dump(body),
            R"({"id":"cmpl-1","object":"text_completion","created":1700000000,)"
            R"("model":"gemma-4-e2b","choices":[{"index":0,"text":" there was",)"
            R"("logprobs":null,"finish_reason":"length","stop_reason":null}],)"
            R"("usage":{"prompt_tokens":4,"total_tokens":20,"completion_tokens":16,)"
            R"("prompt_tokens_details":{"cached_tokens":0}},)"
            R"("g4":{"degenerate":false}})");
  Chunk piece;
  piece.text = " there";
  EXPECT_EQ(Dump(TextChunk(Meta("cmpl-1"), piece)),
            R"({"id":"cmpl-1","object":"text_completion","created":1700000000,)"
            R"("model":"gemma-4-e2b","choices":[{"index":0,"text":" there","logprobs":null,)"
            R"("finish_reason":null,"stop_reason":null}]})");
  Chunk end;
  end.finish_reason = "stop";
  end.stop_reason = "\n\n";
  const ojson last = TextChunk(Meta("cmpl-1"), end);
  EXPECT_EQ(last["choices"][0]["text"], "");
  EXPECT_EQ(last["choices"][0]["stop_reason"], "\n\n");
  EXPECT_EQ(UsageChunk(Meta("cmpl-1"), "text_completion", Usage(1, 1))["object"],
            "text_completion");
}

// n > 1: one entry per choice with its index; the body's g4 is the first degenerate choice's
// verdict plus each choice's; a chunk names its choice.
TEST(ResponseTest, SeveralChoices) {
  std::vector<Choice> choices(3);
  for (int i = 0; i < 3; ++i) {
    choices[i].index = i;
    choices[i].text = "t" + std::to_string(i);
  }
  std::vector<DegeneracyVerdict> verdicts(3);
  verdicts[2].degenerate = true;
  verdicts[2].reason = "token 7 repeated 32 times";
  verdicts[2].start = 3;
  const ojson text = TextCompletion(Meta("cmpl-3"), choices, Usage(4, 30), verdicts);
  ASSERT_EQ(text["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(text["choices"][i]["index"], i);
    EXPECT_EQ(text["choices"][i]["text"], "t" + std::to_string(i));
  }
  EXPECT_EQ(Dump(text["g4"]),
            R"({"degenerate":true,"reason":"token 7 repeated 32 times","start":3,"choices":[)"
            R"({"degenerate":false},{"degenerate":false},)"
            R"({"degenerate":true,"reason":"token 7 repeated 32 times","start":3}]})");
  const ojson chat = ChatCompletion(Meta("chatcmpl-3"), choices, Usage(4, 30), verdicts);
  EXPECT_EQ(chat["choices"][1]["index"], 1);
  EXPECT_EQ(chat["choices"][1]["message"]["content"], "t1");
  verdicts[2] = DegeneracyVerdict{};
  EXPECT_EQ(Dump(DegeneracyJson(verdicts)),
            R"({"degenerate":false,"choices":[{"degenerate":false},{"degenerate":false},)"
            R"({"degenerate":false}]})");
  Chunk chunk;
  chunk.index = 2;
  chunk.text = "x";
  EXPECT_EQ(ChatChunk(Meta("chatcmpl-3"), chunk)["choices"][0]["index"], 2);
  EXPECT_EQ(TextChunk(Meta("cmpl-3"), chunk)["choices"][0]["index"], 2);
}

TEST(ResponseTest, ChatLogprobs) {
  const std::vector<TokenLogprob> tokens = {
      {"Hi", -0.25f, {{"Hi", -0.25f}, {"Hello", -1.5f}}},
      {"\xC3", -std::numeric_limits<float>::infinity(), {}},
  };
  const ojson lp = ChatLogprobs(tokens);
  EXPECT_THAT(Keys(lp), ElementsAre("content"));
  EXPECT_THAT(Keys(lp["content"][0]), ElementsAre("token", "logprob", "bytes", "top_logprobs"));
  EXPECT_EQ(Dump(lp["content"][0]),
            R"({"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[)"
            R"({"token":"Hi","logprob":-0.25,"bytes":[72,105]},)"
            R"({"token":"Hello","logprob":-1.5,"bytes":[72,101,108,108,111]}]})");
  EXPECT_EQ(lp["content"][1]["logprob"], -9999.0) << "JSON has no -inf";
  EXPECT_EQ(Dump(lp["content"][1]["bytes"]), "[195]") << "raw bytes of a partial character";
  Choice choice;
  choice.logprobs = tokens;
  EXPECT_EQ(ChatCompletion(Meta("c"), choice, Usage(1, 2), {})["choices"][0]["logprobs"], lp);
}

TEST(ResponseTest, CompletionLogprobs) {
  const std::vector<TokenLogprob> tokens = {{" caf\xC3\xA9", -0.5f, {{" caf\xC3\xA9", -0.5f}}},
                                            {"!", -1.0f, {}}};
  const ojson lp = CompletionLogprobs(tokens, 10);
  EXPECT_THAT(Keys(lp), ElementsAre("text_offset", "token_logprobs", "tokens", "top_logprobs"));
  EXPECT_EQ(Dump(lp["text_offset"]), "[10,15]") << "offsets count characters, not bytes";
  EXPECT_EQ(Dump(lp["token_logprobs"]), "[-0.5,-1.0]");
  EXPECT_EQ(lp["top_logprobs"][0][" caf\xC3\xA9"], -0.5);
  EXPECT_TRUE(lp["top_logprobs"][1].is_null());
}

TEST(ResponseTest, ModelsList) {
  const ojson list = ModelsList("gemma-4-e2b", 1700000000, 8192, "/models/gemma-4-E2B-it");
  EXPECT_THAT(Keys(list), ElementsAre("object", "data"));
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  const ojson& card = list["data"][0];
  EXPECT_THAT(Keys(card), ElementsAre("id", "object", "created", "owned_by", "root", "parent",
                                      "max_model_len", "permission"));
  EXPECT_EQ(card["id"], "gemma-4-e2b");
  EXPECT_EQ(card["object"], "model");
  EXPECT_EQ(card["max_model_len"], 8192);
  EXPECT_EQ(card["root"], "/models/gemma-4-E2B-it");
  EXPECT_EQ(card["permission"][0]["object"], "model_permission");
  EXPECT_EQ(ModelsList("m", 0, 1)["data"][0]["root"], "m");
}

TEST(ResponseTest, TokenizeAndDetokenize) {
  EXPECT_EQ(Dump(TokenizeResponse({2, 9259}, 8192, std::nullopt)),
            R"({"count":2,"max_model_len":8192,"tokens":[2,9259],"token_strs":null})");
  EXPECT_EQ(Dump(TokenizeResponse({2, 9259}, 8192, std::vector<std::string>{"<bos>", "Hello"})),
            R"({"count":2,"max_model_len":8192,"tokens":[2,9259],)"
            R"("token_strs":["<bos>","Hello"]})");
  EXPECT_EQ(Dump(DetokenizeResponse("Hello")), R"({"prompt":"Hello"})");
}

TEST(ResponseTest, SseFraming) {
  Chunk chunk;
  chunk.text = "line one\nline two";
  const std::string event = SseEvent(ChatChunk(Meta("chatcmpl-4"), chunk));
  ASSERT_GE(event.size(), 8u);
  EXPECT_EQ(event.substr(0, 6), "data: ");
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  EXPECT_EQ(event.find('\n'), event.size() - 2) << "one line of JSON: newlines are escaped";
  EXPECT_TRUE(ojson::accept(event.substr(6)));
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  EXPECT_EQ(kSsePing.substr(0, 1), ":");
}

TEST(ResponseTest, InvalidUtf8IsReplacedNeverThrown) {
  Choice choice;
  choice.text = "half an emoji: \xF0\x9F\x98 and a stray \xFF byte";
  choice.reasoning = "\xC3";
  std::string dumped;
  ASSERT_NO_THROW(dumped = Dump(ChatCompletion(Meta("c"), choice, Usage(1, 1), {})));
  EXPECT_THAT(dumped, HasSubstr("half an emoji: \xEF\xBF\xBD and a stray \xEF\xBF\xBD byte"));
  Chunk chunk;
  chunk.text = "\xE2\x82";
  chunk.logprobs = std::vector<TokenLogprob>{{"\xE2\x82", -1.0f, {{"\xFF", -2.0f}}}};
  std::string event;
  ASSERT_NO_THROW(event = SseEvent(ChatChunk(Meta("c"), chunk)));
  EXPECT_THAT(event, HasSubstr("\xEF\xBF\xBD"));
  Chunk text;
  text.logprobs = std::vector<TokenLogprob>{{"a", -1.0f, {{"\xFF", -2.0f}}}};  // invalid key
  ASSERT_NO_THROW(event = SseEvent(TextChunk(Meta("c"), text)));
  EXPECT_TRUE(ojson::accept(event.substr(6))) << "the output is valid JSON";
}

TEST(ResponseTest, RequestIds) {
  const std::string id = NewRequestId("chatcmpl-");
  EXPECT_THAT(id, MatchesRegex("chatcmpl-[0-9a-f]{32}"));
  EXPECT_THAT(NewRequestId("cmpl-"), MatchesRegex("cmpl-[0-9a-f]{32}"));
  // Unique across threads.
  std::vector<std::vector<std::string>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& ids : per_thread) {
    threads.emplace_back([&ids] {
      for (int i = 0; i < 2000; ++i) ids.push_back(NewRequestId("cmpl-"));
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& ids : per_thread) all.insert(ids.begin(), ids.end());
  EXPECT_EQ(all.size(), 8000u);
  EXPECT_GT(UnixNow(), 1700000000);
}

}  // namespace
}  // namespace g4::openai
