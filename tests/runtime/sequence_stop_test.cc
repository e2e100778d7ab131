// Sequence endings on logits made by hand: a forced token loop stops the sequence with
// "degenerate" only when stop_on_degenerate asks for it, and the text held back for a stop
// string that never came is emitted then, as it is when the sequence runs out of tokens.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/sequence.h"

namespace g4 {
namespace {

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Feeds logits that always favour token 3 (a loop) until the sequence finishes.
GenerationResult Loop(GenerationOptions o) {
  o.sampling.greedy = true;
  Sequence seq({1, 2}, o, [](int32_t) { return std::string("ab"); });
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 5.0f, 0.0f};
  std::string emitted;
  while (!seq.finished()) emitted += seq.Accept(logits).text;
  EXPECT_EQ(emitted, seq.result().text);
  return seq.result();
}

TEST(SequenceStopTest, ALoopStopsOnlyWhenAskedAndFlushesHeldText) {
  GenerationOptions o;
  o.max_tokens = 20;
  o.degeneracy.max_token_run = 4;
  o.stop_strings = {"abX"};  // every "ab" might start it: the last one is always held back
  GenerationResult r = Loop(o);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_TRUE(r.degeneracy.degenerate);
  EXPECT_EQ(r.tokens.size(), 20u);
  EXPECT_EQ(r.text, Repeat("ab", 20));
  o.stop_on_degenerate = true;
  r = Loop(o);
  EXPECT_EQ(r.finish_reason, "degenerate");
  EXPECT_TRUE(r.degeneracy.degenerate);
  EXPECT_EQ(r.tokens.size(), 4u);
  EXPECT_EQ(r.text, Repeat("ab", 4)) << "the held-back \"ab\" is part of the answer";
}

}  // namespace
}  // namespace g4
