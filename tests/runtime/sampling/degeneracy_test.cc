// Tests for DegeneracyDetector: crafted loops that must trip (with the trip point and where
// the loop began) and legitimate structure that must not (lists, indentation, tables,
// whitespace runs, phrases said three times).
#include "runtime/sampling/degeneracy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace g4 {
namespace {

using ::testing::HasSubstr;

// Pushes tokens; returns the index (in the pushed sequence) of the token that tripped, or -1.
int64_t PushAll(DegeneracyDetector& d, const std::vector<int32_t>& tokens) {
  int64_t trip = -1;
  for (int32_t t : tokens) {
    d.Push(t);
    if (d.tripped() && trip < 0) trip = d.size() - 1;
  }
  return trip;
}

std::vector<int32_t> Repeat(const std::vector<int32_t>& block, int times) {
  std::vector<int32_t> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), block.begin(), block.end());
  return out;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<int32_t> kPrefix = {501, 502, 503, 504, 505, 506, 507, 508, 509, 510};

// ---- Loops that must trip ----

TEST(DegeneracyTest, RunOfOneTokenTripsAtTheThreshold) {
  DegeneracyDetector d;
  PushAll(d, Concat(kPrefix, Repeat({464}, 31)));
  EXPECT_FALSE(d.tripped());  // 31 in a row: still legitimate
  d.Push(464);
  ASSERT_TRUE(d.tripped());
  EXPECT_EQ(d.verdict().start, 10);
  EXPECT_EQ(d.verdict().period, 1);
  EXPECT_EQ(d.verdict().span, 32);
  EXPECT_EQ(d.verdict().reason, "token 464 repeated 32 times");
}

TEST(DegeneracyTest, TheTheTheAfterText) {
  // "The cat sat. The The The ..." - the run starts at the second "The".
  const int32_t kThe = 576;
  DegeneracyDetector d;
  const int64_t trip = PushAll(d, Concat({kThe, 8, 9, 10}, Repeat({kThe}, 100)));
  EXPECT_EQ(trip, 4 + 31);
  EXPECT_EQ(d.verdict().start, 4);
  EXPECT_THAT(d.verdict().reason, HasSubstr("token 576"));
}

// With the tokenizer's word test, a word repeated trips at max_word_run (16): Gemma 3 270M's
// " France. The The The ..." (30 " The" in a 32-token answer) is flagged; a digit keeps 32.
TEST(DegeneracyTest, WordRunsTripAtTheWordThreshold) {
  const int32_t kThe = 669, kZero = 236771;
  DegeneracyOptions o;
  o.is_word = [](int32_t id) { return id == kThe; };
  DegeneracyDetector d(o);
  const int64_t trip = PushAll(d, Concat({7001, 236761}, Repeat({kThe}, 30)));
  EXPECT_EQ(trip, 2 + 15);
  EXPECT_EQ(d.verdict().start, 2);
  EXPECT_EQ(d.verdict().reason, "token 669 repeated 16 times");
  DegeneracyDetector digits(o);
  EXPECT_EQ(PushAll(digits, Repeat({kZero}, 31)), -1);  // not a word: still 32
  // Without the word test every id waits for max_token_run.
  DegeneracyDetector plain;
  EXPECT_EQ(PushAll(plain, Concat({7001, 236761}, Repeat({kThe}, 30))), -1);
  o.max_word_run = 1;
  EXPECT_THAT(o.Validate().message(), HasSubstr("max_word_run must be >= 2"));
}

TEST(DegeneracyTest, FourGramLoopTripsAt48TokensAndReportsTheBlock) {
  DegeneracyDetector d;
  const int64_t trip = PushAll(d, Concat(kPrefix, Repeat({10, 11, 12, 13}, 20)));
  EXPECT_EQ(trip, 10 + 48 - 1);  // 12 copies = the 48-token span
  EXPECT_EQ(d.verdict().start, 10);
  EXPECT_EQ(d.verdict().period, 4);
  EXPECT_EQ(d.verdict().span, 48);
  EXPECT_EQ(d.verdict().reason, "4-gram [10, 11, 12, 13] repeated 12 times");
}

TEST(DegeneracyTest, BigramLoopNeeds48Tokens) {
  DegeneracyDetector d;
  PushAll(d, Concat(kPrefix, Repeat({7, 8}, 23)));
  EXPECT_FALSE(d.tripped());  // 46 tokens
  PushAll(d, {7, 8});
  ASSERT_TRUE(d.tripped());
  EXPECT_EQ(d.verdict().start, 10);
  EXPECT_EQ(d.verdict().reason, "2-gram [7, 8] repeated 24 times");
}

TEST(DegeneracyTest, SentenceLoopNeedsFourCopies) {
  std::vector<int32_t> sentence;
  for (int i = 0; i < 20; ++i) sentence.push_back(100 + i);
  DegeneracyDetector d;
  PushAll(d, Concat(kPrefix, Repeat(sentence, 3)));
  EXPECT_FALSE(d.tripped());  // 60 tokens > 48, but only three copies
  const int64_t trip = PushAll(d, sentence);
  EXPECT_EQ(trip, 10 + 80 - 1);
  EXPECT_EQ(d.verdict().start, 10);
  EXPECT_EQ(d.verdict().period, 20);
  EXPECT_THAT(d.verdict().reason, HasSubstr("20-gram [100, 101,"));
  EXPECT_THAT(d.verdict().reason, HasSubstr("repeated 4 times"));
}

TEST(DegeneracyTest, LongestBlockIsMaxNgram) {
  std::vector<int32_t> block32, block33;
  for (int i = 0; i < 32; ++i) block32.push_back(200 + i);
  for (int i = 0; i < 33; ++i) block33.push_back(300 + i);
  DegeneracyDetector d;
  PushAll(d, Repeat(block32, 4));
  EXPECT_TRUE(d.tripped());
  EXPECT_EQ(d.verdict().period, 32);
  DegeneracyDetector e;
  PushAll(e, Repeat(block33, 10));
  EXPECT_FALSE(e.tripped());  // beyond max_ngram: by design not checked
}

TEST(DegeneracyTest, StartIsWhereThePeriodicTailBegins) {
  // The prefix ends with "12 13", the block's second half: the loop is periodic from there,
  // so it began at index 3 and the block as first seen is [12, 13, 10, 11].
  DegeneracyDetector d;
  PushAll(d, Concat({1, 2, 3, 12, 13}, Repeat({10, 11, 12, 13}, 15)));
  ASSERT_TRUE(d.tripped());
  EXPECT_EQ(d.verdict().start, 3);
  EXPECT_EQ(d.verdict().reason, "4-gram [12, 13, 10, 11] repeated 12 times");
}

TEST(DegeneracyTest, ReportsTheShortestPeriod) {
  // With runs allowed up to 100, a run of one id is not called a 2-gram (or 3-gram) at 48.
  DegeneracyOptions o;
  o.max_token_run = 100;
  DegeneracyDetector d(o);
  const int64_t trip = PushAll(d, Repeat({9}, 150));
  EXPECT_EQ(trip, 99);
  EXPECT_EQ(d.verdict().period, 1);
  // A 4-gram that is really a 2-gram [a b a b] is reported as the 2-gram.
  DegeneracyDetector e;
  PushAll(e, Repeat({5, 6, 5, 6}, 20));
  EXPECT_EQ(e.verdict().period, 2);
}

TEST(DegeneracyTest, VerdictIsLatchedAtTheTrip) {
  DegeneracyDetector d;
  PushAll(d, Repeat({3}, 40));
  const DegeneracyVerdict first = d.verdict();
  PushAll(d, Repeat({4, 5}, 100));
  EXPECT_EQ(d.verdict().reason, first.reason);
  EXPECT_EQ(d.verdict().start, 0);
  d.Reset();
  EXPECT_FALSE(d.tripped());
  EXPECT_EQ(d.size(), 0);
  EXPECT_EQ(d.verdict().start, -1);
}

// ---- Legitimate text that must not trip ----

// Token ids for the fake vocabulary below: digits 0-9 are ids 0-9 (Gemma splits digits).
constexpr int32_t kDot = 20, kSpace = 21, kNewline = 22, kIndent = 23, kPipe = 24, kDashes = 25;

std::vector<int32_t> Digits(int n) {
  const std::string s = std::to_string(n);
  std::vector<int32_t> out;
  for (char c : s) out.push_back(c - '0');
  return out;
}

TEST(DegeneracyTest, NumberedListWithIdenticalItemsDoesNotTrip) {
  // "1. item\n2. item\n ... 500. item\n": only the number changes.
  std::vector<int32_t> text;
  for (int i = 1; i <= 500; ++i) {
    text = Concat(text, Digits(i));
    text = Concat(text, {kDot, 30, 31, kNewline});
  }
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, IndentedCodeDoesNotTrip) {
  // Lines of 1-4 indentation tokens then 3-9 random statement tokens, blank lines between
  // blocks: the indentation repeats, the content after it does not.
  std::mt19937 gen(11);
  std::vector<int32_t> text;
  for (int line = 0; line < 2000; ++line) {
    const int depth = 1 + static_cast<int>(gen() % 4);
    for (int i = 0; i < depth; ++i) text.push_back(kIndent);
    const int len = 3 + static_cast<int>(gen() % 7);
    for (int i = 0; i < len; ++i) text.push_back(100 + static_cast<int32_t>(gen() % 60));
    text.push_back(kNewline);
    if (line % 10 == 9) text.push_back(kNewline);
  }
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, TableWithSharedStructureDoesNotTrip) {
  // | name | 123 | ok |  rows: same pipes and status word, different cells; a 3-column
  // separator row and a 20-column one (40 tokens of period 2, below the 48-token span).
  std::vector<int32_t> text = {kPipe, 40, kPipe, 41, kPipe, 42, kPipe, kNewline};
  text = Concat(text, Repeat({kPipe, kDashes}, 3));
  text = Concat(text, {kPipe, kNewline});
  for (int row = 0; row < 300; ++row) {
    text = Concat(text, {kPipe, 1000 + row, kPipe});
    text = Concat(text, Digits(row * 37 % 1000));
    text = Concat(text, {kPipe, 50, kPipe, kNewline});
  }
  text = Concat(text, Repeat({kPipe, kDashes}, 20));
  text = Concat(text, {kPipe, kNewline});
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, ModerateWhitespaceRunsDoNotTrip) {
  // Runs of 8 newlines and of 8 spaces between paragraphs, and one run of 31 spaces.
  std::vector<int32_t> text;
  for (int p = 0; p < 200; ++p) {
    text = Concat(text, {60 + p % 7, 70 + p % 11, 80 + p % 13});
    text = Concat(text, Repeat({p % 2 ? kNewline : kSpace}, 8));
  }
  text = Concat(text, Repeat({kSpace}, 31));
  text.push_back(90);
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, SixtyFourBitHexZeroDoesNotTrip) {
  // "0x0000000000000000": sixteen "0" tokens, twice on a line.
  std::vector<int32_t> text = Concat({0, 40}, Repeat({0}, 16));
  text = Concat(text, {kSpace, 0, 40});
  text = Concat(text, Repeat({0}, 16));
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, PhraseSaidThreeTimesDoesNotTrip) {
  // "Yes, I will. Yes, I will. Yes, I will." (a 16-token line) three times, then more text.
  std::vector<int32_t> line;
  for (int i = 0; i < 16; ++i) line.push_back(120 + i);
  std::vector<int32_t> text = Concat(kPrefix, Repeat(line, 3));
  text = Concat(text, kPrefix);
  text = Concat(text, Repeat(line, 3));
  DegeneracyDetector d;
  PushAll(d, text);
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
}

TEST(DegeneracyTest, LongRandomTextDoesNotTripAndStaysCheap) {
  // A million tokens from a small vocabulary: O(max_ngram) per push keeps this fast.
  std::mt19937 gen(5);
  DegeneracyDetector d;
  for (int i = 0; i < 1000000; ++i) d.Push(static_cast<int32_t>(gen() % 200));
  EXPECT_FALSE(d.tripped()) << d.verdict().reason;
  EXPECT_EQ(d.size(), 1000000);
}

TEST(DegeneracyTest, CheckDegeneracyOverASequence) {
  const std::vector<int32_t> loop = Concat(kPrefix, Repeat({10, 11, 12}, 30));
  const DegeneracyVerdict v = CheckDegeneracy(loop);
  EXPECT_TRUE(v.degenerate);
  EXPECT_EQ(v.start, 10);
  EXPECT_EQ(v.reason, "3-gram [10, 11, 12] repeated 16 times");
  EXPECT_FALSE(CheckDegeneracy(kPrefix).degenerate);
  EXPECT_EQ(CheckDegeneracy(kPrefix).start, -1);
}

// ---- Options ----

TEST(DegeneracyTest, OptionsValidateNamesTheField) {
  EXPECT_TRUE(DegeneracyOptions().Validate().ok());
  DegeneracyOptions o;
  o.max_token_run = 1;
  EXPECT_THAT(o.Validate().message(), HasSubstr("DegeneracyOptions.max_token_run"));
  o = {};
  o.max_ngram = 0;
  EXPECT_THAT(o.Validate().message(), HasSubstr("DegeneracyOptions.max_ngram"));
  o = {};
  o.min_ngram_repeats = 1;
  EXPECT_THAT(o.Validate().message(), HasSubstr("DegeneracyOptions.min_ngram_repeats"));
  o = {};
  o.min_ngram_span = 0;
  EXPECT_THAT(o.Validate().message(), HasSubstr("DegeneracyOptions.min_ngram_span"));
}

TEST(DegeneracyTest, RunsOnlyWhenMaxNgramIsOne) {
  DegeneracyOptions o;
  o.max_ngram = 1;
  DegeneracyDetector d(o);
  PushAll(d, Repeat({1, 2}, 200));
  EXPECT_FALSE(d.tripped());
  PushAll(d, Repeat({3}, 32));
  EXPECT_TRUE(d.tripped());
}

}  // namespace
}  // namespace g4
