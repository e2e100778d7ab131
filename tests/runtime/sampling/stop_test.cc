// Tests for StopChecker: stop strings across token boundaries, held-back prefixes, overlapping
// stop strings, stop ids and ignore_eos.
#include "runtime/sampling/stop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace g4 {
namespace {

// Feeds pieces (token id = index + 1000, never a stop id) and concatenates what is emitted.
struct FedText {
  std::string emitted;
  bool stopped = false;
  std::string reason;
  int stop_index = -1;
};

FedText FeedAll(StopChecker& checker, const std::vector<std::string>& pieces) {
  FedText run;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const StopResult r = checker.Feed(static_cast<int32_t>(1000 + i), pieces[i]);
    run.emitted += r.emit;
    if (r.stop && !run.stopped) {
      run.stopped = true;
      run.reason = r.reason;
      run.stop_index = static_cast<int>(i);
    }
  }
  return run;
}

TEST(StopCheckerTest, NoStopsEmitsEverythingAtOnce) {
  StopChecker c({}, {});
  EXPECT_EQ(c.Feed(5, "Hello").emit, "Hello");
  EXPECT_EQ(c.Feed(6, "").emit, "");
  EXPECT_EQ(c.Feed(7, " world").emit, " world");
  EXPECT_EQ(c.Flush(), "");
}

TEST(StopCheckerTest, StopStringSplitOverThreeTokens) {
  StopChecker c({}, {"</end>"});
  StopResult r = c.Feed(1, "Hi <");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "Hi ");  // "<" could start the stop string: held
  EXPECT_EQ(c.held(), "<");
  r = c.Feed(2, "/en");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(c.held(), "</en");
  r = c.Feed(3, "d> tail");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.reason, "stop_string");
  EXPECT_EQ(r.emit, "");  // neither the stop string nor what follows it
  EXPECT_TRUE(c.stopped());
  EXPECT_EQ(c.Flush(), "");
}

TEST(StopCheckerTest, TextBeforeTheStopStringInTheSamePieceIsEmitted) {
  StopChecker c({}, {"STOP"});
  const FedText run = FeedAll(c, {"one ", "two ST", "OP three"});
  EXPECT_TRUE(run.stopped);
  EXPECT_EQ(run.stop_index, 2);
  EXPECT_EQ(run.emitted, "one two ");
  StopChecker d({}, {"STOP"});
  const StopResult r = d.Feed(1, "abcSTOPdef");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.emit, "abc");
}

TEST(StopCheckerTest, PartialPrefixIsHeldThenReleased) {
  StopChecker c({}, {"STOP"});
  StopResult r = c.Feed(1, "ST");
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(c.held(), "ST");
  r = c.Feed(2, "ART");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "START");  // not a stop after all: released whole
  EXPECT_EQ(c.held(), "");

  // A released prefix can overlap a new one: "STO" + "ST" releases "STO", holds "ST".
  r = c.Feed(3, "STO");
  EXPECT_EQ(r.emit, "");
  r = c.Feed(4, "ST");
  EXPECT_EQ(r.emit, "STO");
  EXPECT_EQ(c.held(), "ST");
  r = c.Feed(5, "OP");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.emit, "");
}

TEST(StopCheckerTest, FlushReturnsHeldTextAtMaxTokens) {
  StopChecker c({}, {"\n\nUser:"});
  const FedText run = FeedAll(c, {"Answer.", "\n\n", "Us"});
  EXPECT_FALSE(run.stopped);
  EXPECT_EQ(run.emitted, "Answer.");
  EXPECT_EQ(c.Flush(), "\n\nUs");
  EXPECT_EQ(c.Flush(), "");
}

TEST(StopCheckerTest, OverlappingStopStringsEarliestStartWins) {
  // "bc" completes inside "abcd"'s prefix: stop at "bc", emit what precedes it.
  StopChecker c({}, {"abcd", "bc"});
  StopResult r = c.Feed(1, "xab");
  EXPECT_EQ(r.emit, "x");  // "ab" may start "abcd" (and "b" may start "bc")
  r = c.Feed(2, "c");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.emit, "a");

  // Both complete in the same piece: the earlier start wins, whatever the list order.
  for (const std::vector<std::string>& stops :
       {std::vector<std::string>{"world", "or"}, std::vector<std::string>{"or", "world"}}) {
    StopChecker d({}, stops);
    const FedText run = FeedAll(d, {"hello w", "orld!"});
    EXPECT_TRUE(run.stopped);
    EXPECT_EQ(run.emitted, "hello ");
  }
}

TEST(StopCheckerTest, HoldsTheLongestPossiblePrefixOfAnyStopString) {
  StopChecker c({}, {"<eos>", "<end_of_turn>"});
  StopResult r = c.Feed(1, "a<e");
  EXPECT_EQ(r.emit, "a");
  EXPECT_EQ(c.held(), "<e");
  r = c.Feed(2, "nd_");
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(c.held(), "<end_");
  r = c.Feed(3, "x>");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "<end_x>");
}

TEST(StopCheckerTest, StopIdEndsWithoutItsTextAndReleasesHeldText) {
  StopChecker c({1, 106, 50}, {"###"});
  EXPECT_EQ(c.Feed(7, "Done #").emit, "Done ");
  const StopResult r = c.Feed(106, "<end_of_turn>");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.reason, "stop_id");
  EXPECT_EQ(r.emit, "#");  // held text was not a stop string; the id's own text is dropped
  // After a stop everything is inert.
  const StopResult after = c.Feed(8, "more");
  EXPECT_TRUE(after.stop);
  EXPECT_EQ(after.emit, "");
  EXPECT_EQ(after.reason, "stop_id");
  EXPECT_EQ(c.Flush(), "");
}

TEST(StopCheckerTest, IgnoreEosContinuesPastStopIdsButNotStopStrings) {
  StopChecker c({1, 106}, {"END"}, /*ignore_eos=*/true);
  StopResult r = c.Feed(106, "<end_of_turn>");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "<end_of_turn>");
  r = c.Feed(1, "");
  EXPECT_FALSE(r.stop);
  r = c.Feed(9, "x END");
  EXPECT_TRUE(r.stop);
  EXPECT_EQ(r.reason, "stop_string");
  EXPECT_EQ(r.emit, "x ");
}

TEST(StopCheckerTest, EmptyStopStringsAreIgnored) {
  StopChecker c({}, {"", "zz"});
  const StopResult r = c.Feed(1, "abc");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.emit, "abc");
}

TEST(StopCheckerTest, MultiByteStopStringCutsOnCharacterBoundaries) {
  StopChecker c({}, {"終わり"});
  const FedText run = FeedAll(c, {"これで", "終", "わり", "です"});
  EXPECT_TRUE(run.stopped);
  EXPECT_EQ(run.stop_index, 2);
  EXPECT_EQ(run.emitted, "これで");
}

}  // namespace
}  // namespace g4
