// Conversation: the messages a chat accumulates, the prompt each turn sends (the chat template
// over the whole history), and what /reset, /system and /save do to them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/conversation.h"

namespace g4 {
namespace {

using nlohmann::json;

TEST(ConversationTest, EachPromptIsTheWholeHistoryThroughTheTemplate) {
  Conversation c{ChatOptions{}};
  c.AddUser("hi");
  auto first = c.Prompt();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, *RenderChat(json::array({{{"role", "user"}, {"content", "hi"}}}), json(),
                                ChatOptions{}));
  c.AddAssistant("Hello!");
  c.AddUser("and?");
  const json expected = json::array({{{"role", "user"}, {"content", "hi"}},
                                     {{"role", "assistant"}, {"content", "Hello!"}},
                                     {{"role", "user"}, {"content", "and?"}}});
  EXPECT_EQ(c.Messages(), expected);
  auto second = c.Prompt();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *RenderChat(expected, json(), ChatOptions{}));
  EXPECT_NE(second->find("Hello!"), std::string::npos);
}

TEST(ConversationTest, SystemStartsOverAndResetKeepsIt) {
  Conversation c{ChatOptions{}};
  c.AddUser("hi");
  c.AddAssistant("yo");
  c.SetSystem("Be brief.");
  EXPECT_EQ(c.Messages(), json::array({{{"role", "system"}, {"content", "Be brief."}}}));
  c.AddUser("hi");
  c.AddAssistant("yo");
  EXPECT_EQ(c.size(), 2u);
  EXPECT_NE(c.Prompt()->find("Be brief."), std::string::npos);
  c.Reset();
  EXPECT_EQ(c.Messages(), json::array({{{"role", "system"}, {"content", "Be brief."}}}));
  c.SetSystem("");
  EXPECT_EQ(c.Messages(), json::array());
}

TEST(ConversationTest, PopLastDropsAnUnansweredTurn) {
  Conversation c{ChatOptions{}};
  c.AddUser("hi");
  c.AddAssistant("yo");
  c.AddUser("too long");
  c.PopLast();
  EXPECT_EQ(c.Messages().size(), 2u);
  EXPECT_EQ(c.Messages().back()["role"], "assistant");
}

TEST(ConversationTest, SaveWritesOpenAiMessages) {
  Conversation c{ChatOptions{}};
  c.SetSystem("S");
  c.AddUser("hi");
  c.AddAssistant("cut \xE2\x82");  // an answer stopped inside a character
  const std::string path = ::testing::TempDir() + "conversation_test.json";
  ASSERT_TRUE(c.Save(path).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const json saved = json::parse(text.str());
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_EQ(saved[0], json({{"role", "system"}, {"content", "S"}}));
  EXPECT_EQ(saved[2]["content"], "cut \xEF\xBF\xBD");  // U+FFFD
  std::remove(path.c_str());
  const Status bad = c.Save("/nonexistent-dir/x.json");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-dir/x.json"), std::string::npos);
}

TEST(ConversationTest, AModelWithoutTemplateIsRefused) {
  ChatOptions o;
  o.style.format = ChatFormat::kNone;
  Conversation c{o};
  c.AddUser("hi");
  EXPECT_FALSE(c.Prompt().ok());
}

}  // namespace
}  // namespace g4
