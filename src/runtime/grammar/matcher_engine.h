// The pushdown automaton behind GrammarMatcher. A state is a small set of stacks (anyOf makes
// the automaton nondeterministic; identical stacks are merged), each a vector of fixed-size
// frames, stored flat so that copying a state per trie depth allocates nothing once warm.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/grammar/grammar_internal.h"

namespace g4::grammar {

// One active node. Field meaning depends on the node kind (matcher_engine.cc, scalar_step.cc);
// unused fields stay zero so that equal states compare equal bytewise.
struct Frame {
  int32_t node;
  int16_t phase;
  int16_t x;
  int32_t i;
  int32_t j;
  int64_t v;
};
static_assert(sizeof(Frame) == 24, "Frame must have no padding (compared bytewise)");

// Frames per stack: bounds nesting (a JSON object level takes about 3 frames, so recursive
// schemas and free-form values nest about 30 levels deep).
inline constexpr size_t kMaxFrames = 96;
// Stacks per state: beyond this, further alternatives are dropped (only a pathological anyOf
// of look-alike schemas gets near it).
inline constexpr size_t kMaxStacks = 32;

struct Stacks {
  std::vector<Frame> frames;
  std::vector<uint32_t> ends;  // stack k is frames[ends[k-1], ends[k])
  size_t count() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  void clear() {
    frames.clear();
    ends.clear();
  }
};

inline Frame StartFrame(int32_t node) { return Frame{node, 0, 0, 0, 0, 0}; }

// Scalar nodes (scalar_step.cc): advance `f` over `sym` in place; false if rejected.
bool AdvanceScalar(const Node& n, Frame* f, int sym);
bool ScalarCanEnd(const Node& n, const Frame& f);
// Whether a frame of any kind has matched a whole instance of its node.
bool FrameCanEnd(const Grammar& g, const Frame& f);

class Engine {
 public:
  explicit Engine(const Grammar* g);
  void Init(Stacks* s) const;
  // *out = every continuation of `in` by `sym` (out != &in); false if there is none.
  bool Step(const Stacks& in, int sym, Stacks* out);
  bool IsComplete(const Stacks& s) const;

 private:
  void StepStack(int sym, int hops);
  void StepObject(const Node& n, const Frame& top, int sym, size_t sz, int hops);
  void StepArray(const Node& n, const Frame& top, int sym, size_t sz, int hops);
  bool Push(int32_t node);
  void Restore(size_t sz, const Frame& top);
  void Emit();

  const Grammar* g_;
  std::vector<Frame> w_;  // the stack being advanced; capacity reserved, so references hold
  Stacks* out_ = nullptr;
};

}  // namespace g4::grammar
