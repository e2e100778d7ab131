// VocabIndex::Build: token -> symbols, the tries, and the plain-token sets of each dialect.
#include <algorithm>
#include <numeric>

#include "runtime/grammar/grammar_internal.h"
#include "runtime/grammar/vocab_index_internal.h"
#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace g4::grammar {
namespace {

using Impl = VocabIndex::Impl;

std::span<const int16_t> Symbols(const Impl& v, int32_t id) {
  return {v.syms.data() + v.sym_begin[id], v.sym_begin[id + 1] - v.sym_begin[id]};
}

Trie BuildTrie(const Impl& v, std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const auto sa = Symbols(v, a), sb = Symbols(v, b);
    return std::lexicographical_compare(sa.begin(), sa.end(), sb.begin(), sb.end());
  });
  Trie t;
  t.sym.push_back(-1);
  t.depth.push_back(0);
  t.subtree_end.push_back(0);
  t.tok_begin.push_back(0);
  std::vector<int32_t> path = {0};
  std::span<const int16_t> prev;
  for (int32_t id : ids) {
    const auto s = Symbols(v, id);
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (path.size() - 1 > common) {
      t.subtree_end[path.back()] = static_cast<int32_t>(t.sym.size());
      path.pop_back();
    }
    for (size_t k = common; k < s.size(); ++k) {
      path.push_back(static_cast<int32_t>(t.sym.size()));
      t.sym.push_back(s[k]);
      t.depth.push_back(static_cast<uint16_t>(k + 1));
      t.subtree_end.push_back(0);
      t.tok_begin.push_back(static_cast<int32_t>(t.toks.size()));
      t.max_depth = std::max(t.max_depth, static_cast<int>(k + 1));
    }
    t.toks.push_back(id);  // the latest node is this token's node (ids are sorted)
    prev = s;
  }
  while (!path.empty()) {
    t.subtree_end[path.back()] = static_cast<int32_t>(t.sym.size());
    path.pop_back();
  }
  t.tok_begin.push_back(static_cast<int32_t>(t.toks.size()));
  return t;
}

// The code-point count of a plain token of `dialect`, or -1 if it is not plain.
// Gemma content must never spell "<|\"|>" (scalar_step.cc); a plain token neither contains it
// nor ends inside it, so it leaves the string with nothing partial to track.
int PlainCodePoints(const std::string& text, Dialect dialect) {
  if (!utf8::IsValid(text)) return -1;
  if (dialect == Dialect::kGemma) {
    if (text.find(gemma4::kQuote) != std::string::npos) return -1;
    for (size_t k = 1; k < gemma4::kQuote.size(); ++k) {
      if (text.size() >= k && text.compare(text.size() - k, k, gemma4::kQuote, 0, k) == 0) {
        return -1;
      }
    }
  }
  int cps = 0;
  for (unsigned char c : text) {
    if (dialect == Dialect::kJson && (c < 0x20 || c == '"' || c == '\\')) return -1;
    if ((c & 0xC0) != 0x80) ++cps;
  }
  return cps;
}

// Gemma's vocabulary lists some control placeholders as non-special added tokens ("<unused7>",
// "<mask>", "[multimodal]"); they are not text a model should write, so no grammar allows them.
bool IsPlaceholder(std::string_view piece) {
  if (piece == "<mask>" || piece == "[multimodal]") return true;
  constexpr std::string_view kUnused = "<unused";
  if (piece.size() <= kUnused.size() + 1 || piece.substr(0, kUnused.size()) != kUnused ||
      piece.back() != '>') {
    return false;
  }
  for (size_t k = kUnused.size(); k + 1 < piece.size(); ++k) {
    if (piece[k] < '0' || piece[k] > '9') return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<const VocabIndex> VocabIndex::Build(const Tokenizer& tok) {
  auto index = std::shared_ptr<VocabIndex>(new VocabIndex());
  index->impl_ = std::make_unique<Impl>();
  Impl& v = *index->impl_;
  v.vocab_size = tok.vocab_size();
  v.sym_begin.assign(static_cast<size_t>(v.vocab_size) + 1, 0);
  std::vector<int32_t> allowed;
  std::vector<int> cps(v.vocab_size, -1);
  std::vector<int> cps_gemma(v.vocab_size, -1);
  DecodeOptions keep;
  keep.skip_special = false;
  std::string text;
  for (int32_t id = 0; id < v.vocab_size; ++id) {
    v.sym_begin[id] = static_cast<uint32_t>(v.syms.size());
    if (!tok.HasId(id)) continue;
    const TokenKind kind = tok.Kind(id);
    if (kind != TokenKind::kNormal && kind != TokenKind::kByte) {
      // The control tokens the tool syntax writes are symbols (whether or not a tokenizer.json
      // marks them special); other special tokens never appear.
      const std::string_view piece = tok.Piece(id);
      int sym = -1;
      if (piece == gemma4::kQuote) sym = kSymQuote;
      if (piece == gemma4::kToolCallStart) sym = kSymToolCallStart;
      if (piece == gemma4::kToolCallEnd) sym = kSymToolCallEnd;
      if (sym >= 0) {
        v.syms.push_back(static_cast<int16_t>(sym));
        allowed.push_back(id);
        continue;
      }
      if (kind != TokenKind::kAdded) continue;
    }
    if (kind == TokenKind::kAdded && IsPlaceholder(tok.Piece(id))) continue;
    text.clear();
    if (!tok.AppendDecoded(id, keep, &text).ok() || text.empty()) continue;
    for (unsigned char c : text) v.syms.push_back(c);
    allowed.push_back(id);
    cps[id] = PlainCodePoints(text, Dialect::kJson);
    cps_gemma[id] = PlainCodePoints(text, Dialect::kGemma);
  }
  v.sym_begin[v.vocab_size] = static_cast<uint32_t>(v.syms.size());
  v.all = BuildTrie(v, allowed);
  for (int d = 0; d < 2; ++d) {
    const std::vector<int>& c = d == 0 ? cps : cps_gemma;
    Impl::Plain& p = v.plain[d];
    p.mask.assign(v.vocab_size, 0);
    std::vector<int32_t> rest;
    for (int32_t id : allowed) {
      if (c[id] < 0) {
        rest.push_back(id);
      } else {
        p.mask[id] = 1;
        p.by_cp.push_back(id);
        p.max_cp = std::max(p.max_cp, c[id]);
      }
    }
    std::stable_sort(p.by_cp.begin(), p.by_cp.end(),
                     [&](int32_t a, int32_t b) { return c[a] < c[b]; });
    p.upto.assign(p.max_cp + 1, 0);
    for (int32_t id : p.by_cp) ++p.upto[c[id]];
    std::partial_sum(p.upto.begin(), p.upto.end(), p.upto.begin());
    p.rest = BuildTrie(v, std::move(rest));
  }
  return index;
}

VocabIndex::~VocabIndex() = default;

int32_t VocabIndex::vocab_size() const { return impl_->vocab_size; }

}  // namespace g4::grammar
