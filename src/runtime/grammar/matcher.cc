// GrammarMatcher: the per-sequence state and the token mask. The mask is a DFS over the
// vocabulary trie, one automaton step per trie edge, pruning a subtree at its first rejected
// symbol. Inside a string nearly every token is allowed, so there the plain string tokens are
// copied in from a precomputed set and only the others are walked.
#include <algorithm>
#include <cstring>

#include "runtime/grammar/grammar_internal.h"
#include "runtime/grammar/matcher_engine.h"
#include "runtime/grammar/schema_compile.h"
#include "runtime/grammar/vocab_index_internal.h"

namespace g4::grammar {

struct GrammarMatcher::State {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const VocabIndex> vocab;
  std::vector<int32_t> end_ids;
  Engine engine;
  Stacks cur;
  Stacks tmp[2];
  std::vector<Stacks> depth;  // per trie depth, for FillMask

  State(std::shared_ptr<const Grammar> g, std::shared_ptr<const VocabIndex> v,
        std::vector<int32_t> ends)
      : grammar(std::move(g)), vocab(std::move(v)), end_ids(std::move(ends)),
        engine(grammar.get()) {
    engine.Init(&cur);
  }

  bool IsEnd(int32_t id) const {
    return std::find(end_ids.begin(), end_ids.end(), id) != end_ids.end();
  }

  // Marks every token of `trie` whose symbols the automaton accepts from `cur`.
  void Walk(const Trie& t, uint8_t* allowed) {
    if (depth.size() < static_cast<size_t>(t.max_depth) + 1) depth.resize(t.max_depth + 1);
    const int32_t n = static_cast<int32_t>(t.sym.size());
    for (int32_t i = 1; i < n;) {
      const int d = t.depth[i];
      const Stacks& parent = d == 1 ? cur : depth[d - 1];
      if (!engine.Step(parent, t.sym[i], &depth[d])) {
        i = t.subtree_end[i];
        continue;
      }
      for (int32_t k = t.tok_begin[i]; k < t.tok_begin[i + 1]; ++k) allowed[t.toks[k]] = 1;
      ++i;
    }
  }

  // Whether every stack is inside a string's content (one dialect) with nothing pending (no
  // escape, no partial UTF-8 character, no partial "<|\"|>"): then a plain token is allowed
  // exactly when it fits the largest room left (*room, in code points) of any of them.
  bool InPlainString(Dialect* dialect, int64_t* room) const {
    uint32_t begin = 0;
    *room = -1;
    for (uint32_t end : cur.ends) {
      const Frame& top = cur.frames[end - 1];
      const Node& n = grammar->nodes[top.node];
      if (n.kind != NodeKind::kString || top.phase != 1 || top.j != 0) return false;
      if (begin > 0 && n.dialect != *dialect) return false;
      *dialect = n.dialect;
      *room = std::max(*room, n.max - top.i);
      begin = end;
    }
    return begin > 0;
  }
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                               std::shared_ptr<const VocabIndex> vocab,
                               std::vector<int32_t> end_ids)
    : state_(std::make_unique<State>(std::move(grammar), std::move(vocab), std::move(end_ids))) {}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::FillMask(std::span<uint8_t> allowed) {
  State& s = *state_;
  std::fill(allowed.begin(), allowed.end(), 0);
  if (s.vocab == nullptr || allowed.size() < static_cast<size_t>(s.vocab->vocab_size())) return;
  const VocabIndex::Impl& v = s.vocab->impl();
  Dialect dialect = Dialect::kJson;
  int64_t room = 0;
  if (s.InPlainString(&dialect, &room)) {
    const VocabIndex::Impl::Plain& p = v.plain[static_cast<int>(dialect)];
    if (room >= p.max_cp) {
      std::memcpy(allowed.data(), p.mask.data(), p.mask.size());
    } else {
      // Whichever is shorter: set the tokens that fit, or copy all and clear those that don't.
      const int32_t fit = room < 0 ? 0 : p.upto[room];
      const int32_t total = static_cast<int32_t>(p.by_cp.size());
      if (fit <= total / 2) {
        for (int32_t k = 0; k < fit; ++k) allowed[p.by_cp[k]] = 1;
      } else {
        std::memcpy(allowed.data(), p.mask.data(), p.mask.size());
        for (int32_t k = fit; k < total; ++k) allowed[p.by_cp[k]] = 0;
      }
    }
    s.Walk(p.rest, allowed.data());
  } else {
    s.Walk(v.all, allowed.data());
  }
  const bool complete = IsComplete();
  for (int32_t id : s.end_ids) {
    if (id >= 0 && static_cast<size_t>(id) < allowed.size()) allowed[id] = complete ? 1 : 0;
  }
}

bool GrammarMatcher::Accept(int32_t token) {
  State& s = *state_;
  if (s.IsEnd(token)) return IsComplete();
  if (s.vocab == nullptr) return false;
  const VocabIndex::Impl& v = s.vocab->impl();
  if (token < 0 || token >= v.vocab_size) return false;
  const uint32_t b = v.sym_begin[token], e = v.sym_begin[token + 1];
  if (b == e) return false;
  Stacks* from = &s.cur;
  for (uint32_t k = b; k < e; ++k) {
    Stacks* to = &s.tmp[(k - b) % 2];
    if (!s.engine.Step(*from, v.syms[k], to)) return false;
    from = to;
  }
  std::swap(s.cur, *from);
  return true;
}

bool GrammarMatcher::AcceptSymbols(std::span<const int> symbols) {
  State& s = *state_;
  if (symbols.empty()) return true;
  Stacks* from = &s.cur;
  for (size_t k = 0; k < symbols.size(); ++k) {
    if (symbols[k] < 0 || symbols[k] >= kNumSymbols) return false;
    Stacks* to = &s.tmp[k % 2];
    if (!s.engine.Step(*from, symbols[k], to)) return false;
    from = to;
  }
  std::swap(s.cur, *from);
  return true;
}

bool GrammarMatcher::IsComplete() const { return state_->engine.IsComplete(state_->cur); }

bool GrammarMatcher::IsTerminated() const {
  State& s = *state_;
  if (!IsComplete()) return false;
  for (int sym = 0; sym < kNumSymbols; ++sym) {
    if (s.engine.Step(s.cur, sym, &s.tmp[0])) return false;
  }
  return true;
}

StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(const nlohmann::ordered_json& schema,
                                                           std::string_view where) {
  auto g = std::make_shared<Grammar>();
  WsNode(g.get());
  try {
    SchemaCompiler c(g.get(), Dialect::kJson, schema, std::string(where));
    G4_ASSIGN_OR_RETURN(g->root, c.Compile(schema, ""));
  } catch (const std::exception& e) {  // nlohmann throws on surprising shapes
    return InvalidArgument(std::string(where) + ": invalid schema: " + e.what());
  }
  return std::shared_ptr<const Grammar>(std::move(g));
}

std::shared_ptr<const Grammar> JsonObjectGrammar() {
  static const std::shared_ptr<const Grammar> grammar = [] {
    auto g = std::make_shared<Grammar>();
    WsNode(g.get());
    g->root = AnyObject(g.get(), Dialect::kJson);
    return std::shared_ptr<const Grammar>(std::move(g));
  }();
  return grammar;
}

}  // namespace g4::grammar
