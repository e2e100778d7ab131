// Stepping the pushdown automaton. A parent frame is put in its "after the child" phase when it
// pushes a child, so popping a finished child needs no callback: the symbol the child cannot
// take is simply offered to the frame below (when the child may end there). Every branch works
// on one scratch stack in place and restores it, so exploring alternatives allocates nothing.
#include "runtime/grammar/matcher_engine.h"

#include <cstring>

namespace g4::grammar {
namespace {

constexpr int kMaxHops = 64;  // Alt/Ref expansions without consuming (a $ref cycle)

enum ObjectPhase : int16_t { kObjOpen, kObjFirst, kObjColon, kObjAfterValue, kObjNext, kObjDone };
enum ArrayPhase : int16_t { kArrOpen, kArrFirst, kArrAfterItem, kArrNext, kArrDone };

}  // namespace

Engine::Engine(const Grammar* g) : g_(g) { w_.reserve(kMaxFrames + 8); }

void Engine::Init(Stacks* s) const {
  s->clear();
  s->frames.push_back(StartFrame(g_->root));
  s->ends.push_back(1);
}

bool Engine::Push(int32_t node) {
  if (w_.size() >= kMaxFrames) return false;
  w_.push_back(StartFrame(node));
  return true;
}

void Engine::Restore(size_t sz, const Frame& top) {
  w_.resize(sz);
  w_[sz - 1] = top;
}

void Engine::Emit() {
  Stacks& o = *out_;
  const size_t n = w_.size();
  uint32_t begin = 0;
  for (uint32_t end : o.ends) {
    if (end - begin == n && std::memcmp(&o.frames[begin], w_.data(), n * sizeof(Frame)) == 0) {
      return;  // already there
    }
    begin = end;
  }
  if (o.count() >= kMaxStacks) return;
  o.frames.insert(o.frames.end(), w_.begin(), w_.end());
  o.ends.push_back(static_cast<uint32_t>(o.frames.size()));
}

bool Engine::Step(const Stacks& in, int sym, Stacks* out) {
  out->clear();
  out_ = out;
  uint32_t begin = 0;
  for (uint32_t end : in.ends) {
    w_.assign(in.frames.begin() + begin, in.frames.begin() + end);
    StepStack(sym, 0);
    begin = end;
  }
  return !out->empty();
}

bool Engine::IsComplete(const Stacks& s) const {
  uint32_t begin = 0;
  for (uint32_t end : s.ends) {
    bool all = true;
    for (uint32_t k = begin; k < end && all; ++k) all = FrameCanEnd(*g_, s.frames[k]);
    if (all) return true;
    begin = end;
  }
  return false;
}

void Engine::StepStack(int sym, int hops) {
  if (w_.empty() || hops > kMaxHops) return;
  const size_t sz = w_.size();
  const Frame top = w_.back();
  const Node& n = g_->nodes[top.node];
  Frame& f = w_[sz - 1];
  switch (n.kind) {
    case NodeKind::kLiteral:
      if (static_cast<size_t>(top.i) < n.symbols.size() && n.symbols[top.i] == sym) {
        ++f.i;
        Emit();
        Restore(sz, top);
      }
      break;
    case NodeKind::kAlt:
    case NodeKind::kRef:
      for (int32_t c : n.children) {
        f = StartFrame(c);
        StepStack(sym, hops + 1);
        Restore(sz, top);
      }
      break;
    case NodeKind::kSeq:
    case NodeKind::kRepeat: {
      const bool more = n.kind == NodeKind::kSeq
                            ? static_cast<size_t>(top.i) < n.children.size()
                            : top.i < n.max;
      if (more) {
        const int32_t child = n.children[n.kind == NodeKind::kSeq ? top.i : 0];
        ++f.i;
        if (Push(child)) StepStack(sym, hops + 1);
        Restore(sz, top);
      }
      break;
    }
    case NodeKind::kLiteralSet:
      if (AdvanceScalar(n, &f, sym)) Emit();
      Restore(sz, top);
      // A whole literal is matched: its child takes the symbol.
      if (!n.children.empty() && top.i > 0 &&
          n.literals[top.j].size() == static_cast<size_t>(top.i)) {
        f = StartFrame(n.children[top.j]);
        StepStack(sym, hops + 1);
        Restore(sz, top);
      }
      break;
    case NodeKind::kObject:
      StepObject(n, top, sym, sz, hops);
      break;
    case NodeKind::kArray:
      StepArray(n, top, sym, sz, hops);
      break;
    default:
      if (AdvanceScalar(n, &f, sym)) Emit();
      Restore(sz, top);
      break;
  }
  // The top may also be finished already: then the symbol belongs to the frame below.
  if (sz > 1 && FrameCanEnd(*g_, top)) {
    w_.pop_back();
    StepStack(sym, hops);
    w_.push_back(top);
  }
}

void Engine::StepObject(const Node& n, const Frame& top, int sym, size_t sz, int hops) {
  Frame& f = w_[sz - 1];
  const bool ws = n.dialect == Dialect::kJson;
  const bool can_close = top.i > n.last_required;  // no required property left
  switch (top.phase) {
    case kObjOpen:
      if (sym == '{') {
        f.phase = kObjFirst;
        if (!ws || Push(g_->ws)) Emit();
        Restore(sz, top);
      }
      break;
    case kObjFirst:
    case kObjNext:
      if (top.phase == kObjFirst && sym == '}' && can_close) {
        f.phase = kObjDone;
        Emit();
        Restore(sz, top);
      }
      if (n.any_keys) {
        f.phase = kObjColon;
        f.j = -1;
        if ((!ws || Push(g_->ws)) && Push(n.key_node)) StepStack(sym, hops + 1);
        Restore(sz, top);
        break;
      }
      // The next property may be any later one, as long as no required one is skipped.
      for (size_t p = top.i; p < n.props.size(); ++p) {
        if (g_->nodes[n.props[p].key].symbols[0] == sym) {
          f.phase = kObjColon;
          f.j = static_cast<int32_t>(p);
          f.i = static_cast<int32_t>(p + 1);
          if ((!ws || Push(g_->ws)) && Push(n.props[p].key)) StepStack(sym, hops + 1);
          Restore(sz, top);
        }
        if (n.props[p].required) break;
      }
      break;
    case kObjColon:
      if (sym == ':') {
        const int32_t value = top.j < 0 ? n.children[0] : n.props[top.j].value;
        f.phase = kObjAfterValue;
        if ((!ws || Push(g_->ws)) && Push(value) && (!ws || Push(g_->ws))) Emit();
        Restore(sz, top);
      }
      break;
    case kObjAfterValue:
      if (sym == ',' && (n.any_keys || static_cast<size_t>(top.i) < n.props.size())) {
        f.phase = kObjNext;
        if (!ws || Push(g_->ws)) Emit();
        Restore(sz, top);
      } else if (sym == '}' && can_close) {
        f.phase = kObjDone;
        Emit();
        Restore(sz, top);
      }
      break;
    default:
      break;
  }
}

void Engine::StepArray(const Node& n, const Frame& top, int sym, size_t sz, int hops) {
  Frame& f = w_[sz - 1];
  const bool ws = n.dialect == Dialect::kJson;
  switch (top.phase) {
    case kArrOpen:
      if (sym == '[') {
        f.phase = kArrFirst;
        if (!ws || Push(g_->ws)) Emit();
        Restore(sz, top);
      }
      break;
    case kArrFirst:
    case kArrNext:
      if (top.phase == kArrFirst && sym == ']' && n.min == 0) {
        f.phase = kArrDone;
        Emit();
        Restore(sz, top);
      }
      if (top.i < n.max) {
        f.phase = kArrAfterItem;
        f.i = top.i + 1;
        if ((!ws || Push(g_->ws)) && Push(n.children[0])) StepStack(sym, hops + 1);
        Restore(sz, top);
      }
      break;
    case kArrAfterItem:
      if (sym == ',' && top.i < n.max) {
        f.phase = kArrNext;
        if (!ws || Push(g_->ws)) Emit();
        Restore(sz, top);
      } else if (sym == ']' && top.i >= n.min) {
        f.phase = kArrDone;
        Emit();
        Restore(sz, top);
      }
      break;
    default:
      break;
  }
}

bool FrameCanEnd(const Grammar& g, const Frame& f) {
  const Node& n = g.nodes[f.node];
  switch (n.kind) {
    case NodeKind::kLiteral:
      return static_cast<size_t>(f.i) == n.symbols.size();
    case NodeKind::kAlt:
    case NodeKind::kRef:
      return false;
    case NodeKind::kSeq:
      return static_cast<size_t>(f.i) == n.children.size();
    case NodeKind::kRepeat:
      return f.i >= n.min;
    case NodeKind::kObject:
      return f.phase == kObjDone;
    case NodeKind::kArray:
      return f.phase == kArrDone;
    default:
      return ScalarCanEnd(n, f);
  }
}

}  // namespace g4::grammar
