// DegeneracyDetector: see degeneracy.h for the rules, the defaults and why.
#include "runtime/sampling/degeneracy.h"

#include <algorithm>

namespace g4 {
namespace {

Status TooSmall(const char* field, int minimum, int value) {
  return InvalidArgument("DegeneracyOptions." + std::string(field) + " must be >= " +
                         std::to_string(minimum) + ", got " + std::to_string(value));
}

}  // namespace

Status DegeneracyOptions::Validate() const {
  if (max_token_run < 2) return TooSmall("max_token_run", 2, max_token_run);
  if (max_word_run < 2) return TooSmall("max_word_run", 2, max_word_run);
  if (max_ngram < 1) return TooSmall("max_ngram", 1, max_ngram);
  if (min_ngram_repeats < 2) return TooSmall("min_ngram_repeats", 2, min_ngram_repeats);
  if (min_ngram_span < 2) return TooSmall("min_ngram_span", 2, min_ngram_span);
  return Status::Ok();
}

DegeneracyDetector::DegeneracyDetector(DegeneracyOptions options) : options_(options) {
  options_.max_token_run = std::max(options_.max_token_run, 2);
  options_.max_word_run = std::max(options_.max_word_run, 2);
  options_.max_ngram = std::max(options_.max_ngram, 1);
  options_.min_ngram_repeats = std::max(options_.min_ngram_repeats, 2);
  options_.min_ngram_span = std::max(options_.min_ngram_span, 2);
  Reset();
}

void DegeneracyDetector::Reset() {
  ring_.assign(options_.max_ngram, 0);
  matches_.assign(options_.max_ngram + 1, 0);
  count_ = 0;
  verdict_ = {};
}

void DegeneracyDetector::Push(int32_t token) {
  // matches_[p] counts the trailing tokens t[i] == t[i - p]; the tail is p-periodic over
  // matches_[p] + p tokens. One compare per period keeps a push O(max_ngram).
  const int64_t size = static_cast<int64_t>(ring_.size());
  for (int p = 1; p <= options_.max_ngram; ++p) {
    const bool match = count_ >= p && ring_[(count_ - p) % size] == token;
    matches_[p] = match ? matches_[p] + 1 : 0;
  }
  ring_[count_ % size] = token;  // after the compares: this slot held t[count_ - max_ngram]
  ++count_;
  if (!verdict_.degenerate) Check();
}

void DegeneracyDetector::Check() {
  const int64_t run = matches_[1] + 1;
  const int32_t last = ring_[(count_ - 1) % static_cast<int64_t>(ring_.size())];
  const bool word = options_.is_word && run >= options_.max_word_run && options_.is_word(last);
  if (run >= options_.max_token_run || word) return Trip(1, run);
  for (int p = 2; p <= options_.max_ngram; ++p) {
    const int64_t span = matches_[p] + p;
    const int64_t need = std::max<int64_t>(options_.min_ngram_span,
                                           static_cast<int64_t>(options_.min_ngram_repeats) * p);
    if (span < need) continue;
    // Report a loop under its shortest period: skip p when a divisor period already explains
    // the same tail (it trips, or tripped, under that period's own threshold).
    bool primitive = true;
    for (int d = 1; d < p && primitive; ++d) {
      if (p % d == 0 && matches_[d] + d >= span) primitive = false;
    }
    if (primitive) return Trip(p, span);
  }
}

void DegeneracyDetector::Trip(int period, int64_t span) {
  verdict_.degenerate = true;
  verdict_.start = count_ - span;
  verdict_.period = period;
  verdict_.span = span;
  const int64_t size = static_cast<int64_t>(ring_.size());
  if (period == 1) {
    verdict_.reason = "token " + std::to_string(ring_[(count_ - 1) % size]) + " repeated " +
                      std::to_string(span) + " times";
    return;
  }
  // The block as it first appeared (from `start`), read from its last copy in the ring:
  // position q holds the same id as q + m * period.
  const int64_t last_copy = count_ - period;
  std::string block;
  for (int j = 0; j < period; ++j) {
    const int64_t offset = ((verdict_.start + j - last_copy) % period + period) % period;
    if (j > 0) block += ", ";
    block += std::to_string(ring_[(last_copy + offset) % size]);
  }
  verdict_.reason = std::to_string(period) + "-gram [" + block + "] repeated " +
                    std::to_string(span / period) + " times";
}

DegeneracyVerdict CheckDegeneracy(std::span<const int32_t> generated,
                                  const DegeneracyOptions& options) {
  DegeneracyDetector detector(options);
  for (int32_t token : generated) {
    detector.Push(token);
    if (detector.tripped()) break;  // the verdict is latched at the trip
  }
  return detector.verdict();
}

}  // namespace g4
