// StepGraphs: recorded decode steps (ops/graph.h) for a caller that runs many (the generator,
// the engine, g4 bench), one entry per batch size. The first step of a size runs op by op
// (warming the device's weight cache and sizing the entry's buffers); every later one replays
// the entry's recording as one launch when the batch's caches are the ones it was recorded
// over (every sequence's KV storage_id(), in order), and otherwise records the step anew on the
// same buffers, then launches it: a sequence joining or leaving the batch, or a full layer's
// array growing, costs one recording, not an op-by-op step. Each entry owns the fixed buffers
// its recording points to (ForwardWorkspace). Only a backend that records graphs
// (Backend::can_capture, a running kCuda) uses them; elsewhere, and for prefill chunks, traces
// and full logits, the forward pass runs op by op.
// Not thread-safe: one forward at a time per StepGraphs (as per Backend).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/graph.h"
#include "ops/memory.h"

namespace g4 {

// Every device buffer of one forward pass, kept between passes so a recorded step finds its
// buffers where it recorded them. Buffers only grow (ops/memory.h).
struct ForwardWorkspace {
  explicit ForwardWorkspace(Memory& m)
      : ids(m), pos(m), inv_freq(m), h(m), ple(m), ple_table(m), a(m), o(m), q(m), attn(m),
        gate(m), up(m), g(m), y(m), logits(m), moe_logits(m), moe_out(m) {}
  Buffer<int32_t> ids, pos;                   // [R]
  Buffer<float> inv_freq;                     // every layer's RoPE frequencies
  bool inv_freq_loaded = false;
  Buffer<float> h, ple, ple_table, a, o, q, attn, gate, up, g, y, logits;
  Buffer<float> moe_logits, moe_out;          // MoE layers: [R, experts], [R, H]
  std::vector<Buffer<float>> k, v;            // per layer that owns K/V: [R, nkv, hd]
};

class StepGraphs {
 public:
  // Keeps at most `max_entries` batch sizes (least recently used dropped).
  explicit StepGraphs(int max_entries = 8) : max_entries_(max_entries) {}

  struct Stats {
    int64_t recorded = 0;  // steps recorded (then launched)
    int64_t replayed = 0;  // steps launched from an earlier recording
    int64_t op_by_op = 0;  // decode steps run op by op (first step of a size, or refused)
    int64_t ops_per_step = 0;  // ops in the latest recording
  };
  const Stats& stats() const { return stats_; }
  int max_entries() const { return max_entries_; }
  // Why recording was refused (e.g. an op that runs on the host); empty while it works. Once
  // refused, every later step runs op by op.
  const std::string& refused() const { return refused_; }

 private:
  friend class DecoderModel;
  struct Entry {
    int64_t batch = 0;  // items per step
    std::unique_ptr<ForwardWorkspace> ws;
    std::unique_ptr<OpGraph> graph;
    std::vector<uint64_t> storage;  // the caches' storage_id()s `graph` was recorded over
    int64_t last_use = 0;
  };
  // The entry for `batch` items (created, evicting the least recently used, when new); *fresh
  // says whether it was created now.
  Entry& Get(int64_t batch, Memory& memory, bool* fresh);

  int max_entries_;
  int64_t clock_ = 0;
  std::vector<std::unique_ptr<Entry>> entries_;
  Stats stats_;
  std::string refused_;
};

}  // namespace g4
