// Fuzz-style test of the request parsers: a few thousand random and mutated bodies (byte-level
// damage to valid bodies, field values swapped for random JSON of any type, random objects
// built from the known field names) fed to every parser. Each must return a request or a 4xx
// ApiError: never throw, never a 5xx (the official client retries 5xx), and every error must
// serialise. Accepted chat messages must also go through RenderChat without throwing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "chat/chat.h"
#include "server/openai/field_reader.h"
#include "server/openai/request.h"
#include "server/openai/tokenize_request.h"
#include "server/request_test_util.h"

namespace g4::openai {
namespace {

using json = nlohmann::json;
using ::g4::openai::testing::GemmaDefaults;

const std::vector<std::string>& FieldNames() {
  static const std::vector<std::string> kNames = {
      "model", "messages", "prompt", "max_tokens", "max_completion_tokens", "temperature",
      "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "presence_penalty",
      "frequency_penalty", "repetition_penalty", "repeat_penalty", "n", "best_of", "logprobs",
      "top_logprobs", "stream", "stream_options", "response_format", "tools", "tool_choice",
      "logit_bias", "suffix", "echo", "ignore_eos", "skip_special_tokens", "chat_template_kwargs",
      "reasoning_effort", "include_reasoning", "add_generation_prompt", "user", "metadata",
      "guided_json", "min_tokens", "role", "content", "type", "text", "include_usage",
      "enable_thinking", "tokens", "functions", "function_call", "x_unknown"};
  return kNames;
}

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Coin() { return Int(0, 1) == 1; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(0, static_cast<int>(v.size()) - 1)]; }

  std::string RandomString() {
    static const std::vector<std::string> kStrings = {
        "", "user", "assistant", "system", "tool", "developer", "text", "image_url", "none",
        "auto", "gemma-4-e2b", "json_object", "high", "\n", "<turn|>", "hello world"};
    if (Coin()) return Pick(kStrings);
    std::string s;
    const int n = Int(0, 12);
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(Int(32, 126)));
    return s;
  }

  json RandomValue(int depth) {
    switch (Int(0, depth > 3 ? 6 : 8)) {
      case 0: return nullptr;
      case 1: return Coin();
      case 2: {
        static const std::vector<int64_t> kInts = {0, 1, -1, 2, 16, 20, 21, 64, 106, -2,
                                                   2147483647, 2147483648LL, -9223372036854775807LL,
                                                   9223372036854775807LL};
        return Coin() ? json(Pick(kInts)) : json(Int(-100000, 100000));
      }
      case 3: return json(std::numeric_limits<uint64_t>::max() - Int(0, 5));
      case 4: {
        static const std::vector<double> kFloats = {0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 2.5, -2.5,
                                                    1e-300, 1e300, -1e300, 0.95, 16.0, 3.3e38,
                                                    3.5e38};
        if (Coin()) return Pick(kFloats);
        return std::uniform_real_distribution<double>(-5, 5)(rng_);
      }
      case 5:
      case 6: return RandomString();
      case 7: {
        json a = json::array();
        const int n = Int(0, 4);
        for (int i = 0; i < n; ++i) a.push_back(RandomValue(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        const int n = Int(0, 4);
        for (int i = 0; i < n; ++i) o[Pick(FieldNames())] = RandomValue(depth + 1);
        return o;
      }
    }
  }

  // A plausible message, sometimes damaged.
  json RandomMessage() {
    json m = json::object();
    m["role"] = Coin() ? json(Pick(std::vector<std::string>{"system", "developer", "user",
                                                            "assistant", "tool"}))
                       : RandomValue(2);
    switch (Int(0, 4)) {
      case 0: m["content"] = RandomString(); break;
      case 1: m["content"] = nullptr; break;
      case 2: {
        json parts = json::array();
        const int n = Int(0, 3);
        for (int i = 0; i < n; ++i) {
          parts.push_back(Coin() ? json{{"type", "text"}, {"text", RandomString()}}
                                 : RandomValue(2));
        }
        m["content"] = parts;
        break;
      }
      case 3: m["content"] = RandomValue(2); break;
      default: break;
    }
    if (Int(0, 5) == 0) m[Pick(FieldNames())] = RandomValue(2);
    return m;
  }

  // A body: a valid seed mutated at the structure level.
  json StructuredBody(bool chat) {
    json body = json::object();
    if (chat) {
      json messages = json::array();
      const int n = Int(0, 4);
      for (int i = 0; i < n; ++i) messages.push_back(RandomMessage());
      body["messages"] = messages;
    } else {
      body["prompt"] = Coin() ? json(RandomString()) : RandomValue(1);
    }
    const int extra = Int(0, 5);
    for (int i = 0; i < extra; ++i) body[Pick(FieldNames())] = RandomValue(1);
    if (Int(0, 3) == 0) body.erase(chat ? "messages" : "prompt");
    return body;
  }

  // Byte-level damage to a serialised body; may leave invalid UTF-8 and control bytes.
  std::string Damage(std::string s) {
    const int ops = Int(1, 4);
    for (int op = 0; op < ops; ++op) {
      const size_t size = s.size();
      const size_t at = size == 0 ? 0 : static_cast<size_t>(Int(0, static_cast<int>(size) - 1));
      switch (Int(0, 4)) {
        case 0: if (size > 0) s[at] = static_cast<char>(Int(0, 255)); break;
        case 1: s.erase(at, static_cast<size_t>(Int(1, 8))); break;
        case 2: s.insert(at, 1, static_cast<char>(Int(0, 255))); break;
        case 3: s.insert(at, s.substr(at, static_cast<size_t>(Int(1, 16)))); break;
        default: s.resize(at); break;
      }
    }
    return s;
  }

 private:
  std::mt19937 rng_;
};

// Runs every parser on `body` and checks the contract.
void CheckBody(const std::string& body, int* accepted, int* rejected) {
  const ServerDefaults defaults = GemmaDefaults();
  for (bool chat : {true, false}) {
    ParseResult result = chat ? ParseChatRequest(body, defaults)
                              : ParseCompletionRequest(body, defaults);
    if (result.ok()) {
      ++*accepted;
      const ParsedRequest& r = result.value();
      EXPECT_TRUE(r.sampling.Validate().ok()) << body;
      if (chat) {
        ChatOptions options;
        options.enable_thinking = r.enable_thinking;
        try {
          (void)RenderChat(r.messages, nullptr, options);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "RenderChat threw " << e.what() << " for " << body;
        }
      }
    } else {
      ++*rejected;
      const ApiError& e = result.error();
      EXPECT_GE(e.status, 400) << body;
      EXPECT_LT(e.status, 500) << e.message << "\n  for: " << body;
      EXPECT_FALSE(e.message.empty()) << body;
      EXPECT_NO_THROW((void)ToJsonString(e)) << body;
    }
  }
  ApiResult<TokenizeRequest> tokenize = ParseTokenizeRequest(body, defaults);
  if (!tokenize.ok()) {
    EXPECT_LT(tokenize.error().status, 500) << tokenize.error().message;
  }
  ApiResult<DetokenizeRequest> detokenize = ParseDetokenizeRequest(body, defaults);
  if (!detokenize.ok()) {
    EXPECT_LT(detokenize.error().status, 500) << detokenize.error().message;
  }
}

TEST(RequestFuzzTest, EveryBodyIsARequestOrA4xx) {
  Fuzzer fuzz(20240601);
  int accepted = 0, rejected = 0;
  constexpr int kBodies = 4000;
  for (int i = 0; i < kBodies; ++i) {
    const bool chat = fuzz.Coin();
    const json structured = fuzz.StructuredBody(chat);
    std::string body = structured.dump(-1, ' ', false, json::error_handler_t::replace);
    switch (i % 4) {
      case 0: break;                                  // structure-level only
      case 1: body = fuzz.Damage(body); break;        // plus byte-level damage
      case 2: body = fuzz.RandomValue(0).dump(); break;  // any JSON value at all
      default: {                                      // a valid body, slightly damaged
        const std::string valid =
            chat ? R"({"model":"gemma-4-e2b","messages":[{"role":"user","content":"Hi"}],)"
                   R"("temperature":0.7,"max_tokens":32,"stream":true,)"
                   R"("stream_options":{"include_usage":true},"stop":["\n"]})"
                 : R"({"prompt":[[2,17,33]],"max_tokens":8,"logprobs":2,"echo":true})";
        body = fuzz.Coin() ? fuzz.Damage(valid) : valid;
        break;
      }
    }
    CheckBody(body, &accepted, &rejected);
    if (::testing::Test::HasFailure()) break;  // one body's report is enough
  }
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  // The corpus must exercise both outcomes, or it tests nothing.
  EXPECT_GT(accepted, kBodies / 20);
  EXPECT_GT(rejected, kBodies / 20);
}

TEST(RequestFuzzTest, PathologicalBodies) {
  int accepted = 0, rejected = 0;
  const std::string deep_open(100000, '[');
  const std::string deep = deep_open + std::string(100000, ']');
  const std::vector<std::string> bodies = {
      "", " ", "null", "{}", "[]", "\"\"", "0", "{\"", "{\"messages\":", "\xFF\xFE",
      std::string("{\"messages\":[{\"role\":\"user\",\"content\":\"\0\"}]}", 40),
      "{\"prompt\":\"\xC3\x28\"}",  // invalid UTF-8 inside a string
      "{\"model\":\"\xFF\"}",
      deep_open,
      R"({"prompt":"x","x_unknown":)" + deep + "}",
      R"({"messages":[{"role":"user","content":"x"}],"x_unknown":)" + deep + "}",
      "{\"prompt\":\"" + std::string(1 << 20, 'a') + "\"}",
      "{\"prompt\":\"" + std::string(1 << 20, 'a'),  // unterminated long string
      R"({"messages":[{"role":"user","content":"x"}],"messages":[]})",  // duplicate key
  };
  for (const std::string& body : bodies) CheckBody(body, &accepted, &rejected);

  // Nesting past the limit is refused before anything recurses over it; at the limit it is not.
  for (const std::string& body :
       {R"({"prompt":"x","x_unknown":)" + deep + "}",
        R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":)" + deep +
            "}}]}]}"}) {
    ParseResult r = ParseChatRequest(body, GemmaDefaults());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().status, 400);
    EXPECT_THAT(r.error().message, ::testing::HasSubstr("nested deeper than 128 levels"));
  }
  const std::string at_limit = R"({"prompt":"x","x":)" + std::string(kMaxJsonDepth - 1, '[') +
                               std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_TRUE(ParseCompletionRequest(at_limit, GemmaDefaults()).ok());
  const std::string brackets_in_strings =
      R"({"prompt":")" + std::string(1000, '[') + R"(\"{{{","x":"\\"})";
  ParseResult strings = ParseCompletionRequest(brackets_in_strings, GemmaDefaults());
  EXPECT_TRUE(strings.ok()) << "brackets inside strings are text, not nesting: "
                            << strings.error().message;
}

}  // namespace
}  // namespace g4::openai
