// Leaf nodes of the automaton, byte by byte: strings (JSON escapes or Gemma raw content, strict
// UTF-8, lengths in code points), numbers, range-checked integers, whitespace, bare keys. Each
// rejects a symbol as soon as no completion of the prefix could be valid, so a mask never
// allows a token that leads into a dead end.
#include "runtime/grammar/matcher_engine.h"

namespace g4::grammar {
namespace {

enum StringPhase : int16_t {
  kStrOpen, kStrContent, kStrEscape, kStrHex, kStrLowBackslash, kStrLowU, kStrUtf8, kStrDone
};
enum NumberPhase : int16_t {
  kNumStart, kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumExp, kNumExpSign, kNumExpDigits
};
enum IntegerPhase : int16_t { kIntStart, kIntMinus, kIntZero, kIntDigits };

bool IsDigit(int s) { return s >= '0' && s <= '9'; }

int HexValue(int s) {
  if (s >= '0' && s <= '9') return s - '0';
  if (s >= 'a' && s <= 'f') return s - 'a' + 10;
  if (s >= 'A' && s <= 'F') return s - 'A' + 10;
  return -1;
}

// Starts a multi-byte UTF-8 character at lead byte `b`: the number of continuation bytes and
// the range of the first one (which is what excludes overlongs, surrogates and > U+10FFFF).
bool Utf8Lead(int b, int16_t* need, int64_t* range) {
  int lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    *need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    *need = 2;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    *need = 3;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  *range = (lo << 8) | hi;
  return true;
}

// Gemma strings end at the first "<|\"|>" of the text, so the content must never spell it:
// f->j tracks how much of "<|\"|" the content currently ends with.
int QuoteTextState(int j, int b) {
  static constexpr char kPat[] = "<|\"|";
  if (j < 4 && b == kPat[j]) return j + 1;
  return b == '<' ? 1 : 0;
}

bool AdvanceString(const Node& n, Frame* f, int sym) {
  const bool json = n.dialect == Dialect::kJson;
  const int quote = json ? '"' : kSymQuote;
  switch (f->phase) {
    case kStrOpen:
      if (sym != quote) return false;
      f->phase = kStrContent;
      return true;
    case kStrContent: {
      if (sym == quote) {
        if (f->i < n.min) return false;
        f->phase = kStrDone;
        f->j = 0;
        return true;
      }
      if (sym > 255 || f->i >= n.max) return false;
      if (json) {
        if (sym == '\\') {
          f->phase = kStrEscape;
          return true;
        }
        if (sym < 0x20) return false;
      } else {
        if (f->j == 4 && sym == '>') return false;
        f->j = QuoteTextState(f->j, sym);
      }
      if (sym < 0x80) {
        ++f->i;
        return true;
      }
      if (!Utf8Lead(sym, &f->x, &f->v)) return false;
      ++f->i;
      f->phase = kStrUtf8;
      return true;
    }
    case kStrUtf8:
      if (sym < (f->v >> 8) || sym > (f->v & 0xFF)) return false;
      if (--f->x == 0) {
        f->phase = kStrContent;
        f->v = 0;
      } else {
        f->v = (0x80 << 8) | 0xBF;
      }
      return true;
    case kStrEscape:
      if (sym == 'u') {
        f->phase = kStrHex;
        return true;
      }
      if (sym == '"' || sym == '\\' || sym == '/' || sym == 'b' || sym == 'f' || sym == 'n' ||
          sym == 'r' || sym == 't') {
        ++f->i;
        f->phase = kStrContent;
        return true;
      }
      return false;
    case kStrHex: {
      const int h = HexValue(sym);
      if (h < 0) return false;
      const int64_t val = f->v * 16 + h;
      const int k = f->j + 1;
      const int64_t lo = val << (4 * (4 - k)), hi = ((val + 1) << (4 * (4 - k))) - 1;
      // x == 1: the low half of a surrogate pair; otherwise anything but a lone low half.
      const bool ok = f->x == 1 ? (lo <= 0xDFFF && hi >= 0xDC00)
                                : (lo <= 0xDBFF || hi >= 0xE000);
      if (!ok) return false;
      f->v = val;
      f->j = k;
      if (k < 4) return true;
      const bool high = f->x == 0 && val >= 0xD800 && val <= 0xDBFF;
      if (f->x == 0) ++f->i;  // a pair counts as one code point, at its high half
      f->phase = high ? kStrLowBackslash : kStrContent;
      f->x = 0;
      f->j = 0;
      f->v = 0;
      return true;
    }
    case kStrLowBackslash:
      if (sym != '\\') return false;
      f->phase = kStrLowU;
      return true;
    case kStrLowU:
      if (sym != 'u') return false;
      f->phase = kStrHex;
      f->x = 1;
      return true;
    default:
      return false;
  }
}

bool AdvanceNumber(Frame* f, int sym) {
  const bool digit = IsDigit(sym);
  const bool exp = sym == 'e' || sym == 'E';
  auto go = [&](int16_t phase, int32_t i) {
    f->phase = phase;
    f->i = i;
    return true;
  };
  switch (f->phase) {
    case kNumStart:
      if (sym == '-') return go(kNumMinus, 0);
      [[fallthrough]];
    case kNumMinus:
      if (sym == '0') return go(kNumZero, 1);
      if (digit) return go(kNumInt, 1);
      return false;
    case kNumZero:
    case kNumInt:
      if (digit && f->phase == kNumInt && f->i < kMaxNumberIntDigits) return go(kNumInt, f->i + 1);
      if (sym == '.') return go(kNumDot, 0);
      if (exp) return go(kNumExp, 0);
      return false;
    case kNumDot:
      return digit && go(kNumFrac, 1);
    case kNumFrac:
      if (digit && f->i < kMaxNumberFracDigits) return go(kNumFrac, f->i + 1);
      return exp && go(kNumExp, 0);
    case kNumExp:
      if (sym == '+' || sym == '-') return go(kNumExpSign, 0);
      [[fallthrough]];
    case kNumExpSign:
      return digit && go(kNumExpDigits, 1);
    case kNumExpDigits:
      return digit && f->i < kMaxNumberExpDigits && go(kNumExpDigits, f->i + 1);
    default:
      return false;
  }
}

// Whether some integer written as `m` followed by zero or more digits (at most
// kMaxIntegerDigits in all, m > 0 with k digits), negated if `neg`, lies in [n.min, n.max].
bool IntegerFeasible(const Node& n, bool neg, int64_t m, int k) {
  int64_t p = 1;
  for (int t = 0; k + t <= kMaxIntegerDigits; ++t) {
    int64_t lo = m * p, hi = lo + p - 1;
    if (neg) {
      const int64_t a = -hi;
      hi = -lo;
      lo = a;
    }
    if (lo <= n.max && hi >= n.min) return true;
    if (k + t == kMaxIntegerDigits) break;
    p *= 10;
  }
  return false;
}

bool AdvanceInteger(const Node& n, Frame* f, int sym) {
  const bool neg = f->x != 0;
  switch (f->phase) {
    case kIntStart:
      if (sym == '-') {
        for (int d = 1; d <= 9; ++d) {
          if (IntegerFeasible(n, true, d, 1)) {
            f->phase = kIntMinus;
            f->x = 1;
            return true;
          }
        }
        return false;
      }
      if (sym == '0') {
        if (n.min > 0 || n.max < 0) return false;
        f->phase = kIntZero;
        return true;
      }
      [[fallthrough]];
    case kIntMinus:
      if (sym < '1' || sym > '9' || !IntegerFeasible(n, neg, sym - '0', 1)) return false;
      f->phase = kIntDigits;
      f->v = sym - '0';
      f->i = 1;
      return true;
    case kIntDigits: {
      if (!IsDigit(sym) || f->i >= kMaxIntegerDigits) return false;
      const int64_t m = f->v * 10 + (sym - '0');
      if (!IntegerFeasible(n, neg, m, f->i + 1)) return false;
      f->v = m;
      ++f->i;
      return true;
    }
    default:
      return false;
  }
}

// Frame: i = symbols matched, [j, v) = the range of literals that start with them (j == v == 0
// at the start stands for all of them).
bool AdvanceLiteralSet(const Node& n, Frame* f, int sym) {
  const auto& lits = n.literals;
  size_t lo = f->j, hi = f->v == 0 ? lits.size() : static_cast<size_t>(f->v);
  const size_t i = f->i;
  // Within the range every literal shares the first i symbols, so they are sorted by symbol i
  // (those of length i first).
  auto sym_at = [&](size_t k) { return lits[k].size() > i ? lits[k][i] : -1; };
  auto first = [&](size_t a, size_t b, auto pred) {  // first k in [a, b) with !pred(k)
    while (a < b) {
      const size_t mid = a + (b - a) / 2;
      if (pred(mid)) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    return a;
  };
  lo = first(lo, hi, [&](size_t k) { return sym_at(k) < sym; });
  const size_t end = first(lo, hi, [&](size_t k) { return sym_at(k) == sym; });
  if (lo == end) return false;
  f->i = static_cast<int32_t>(i + 1);
  f->j = static_cast<int32_t>(lo);
  f->v = static_cast<int64_t>(end);
  return true;
}

}  // namespace

bool AdvanceScalar(const Node& n, Frame* f, int sym) {
  switch (n.kind) {
    case NodeKind::kString:
      return AdvanceString(n, f, sym);
    case NodeKind::kNumber:
      return AdvanceNumber(f, sym);
    case NodeKind::kInteger:
      return AdvanceInteger(n, f, sym);
    case NodeKind::kWs:
      if ((sym == ' ' || sym == '\t') && f->i < kMaxWsBlanks) {
        ++f->i;
        return true;
      }
      if (sym == '\n' && f->x == 0) {
        f->x = 1;
        return true;
      }
      return false;
    case NodeKind::kLiteralSet:
      return AdvanceLiteralSet(n, f, sym);
    case NodeKind::kBareKey: {
      const bool ok = (sym >= 'a' && sym <= 'z') || (sym >= 'A' && sym <= 'Z') || sym == '_' ||
                      (f->i > 0 && IsDigit(sym));
      if (!ok || f->i >= kMaxBareKey) return false;
      ++f->i;
      return true;
    }
    default:
      return false;
  }
}

bool ScalarCanEnd(const Node& n, const Frame& f) {
  switch (n.kind) {
    case NodeKind::kString:
      return f.phase == kStrDone;
    case NodeKind::kNumber:
      return f.phase == kNumZero || f.phase == kNumInt || f.phase == kNumFrac ||
             f.phase == kNumExpDigits;
    case NodeKind::kInteger: {
      if (f.phase == kIntZero) return true;
      if (f.phase != kIntDigits) return false;
      const int64_t v = f.x ? -f.v : f.v;
      return v >= n.min && v <= n.max;
    }
    case NodeKind::kWs:
      return true;
    case NodeKind::kBareKey:
      return f.i > 0;
    case NodeKind::kLiteralSet:  // the shortest literal of the range sorts first
      return n.children.empty() && f.i > 0 &&
             n.literals[f.j].size() == static_cast<size_t>(f.i);
    default:
      return false;
  }
}

}  // namespace g4::grammar
