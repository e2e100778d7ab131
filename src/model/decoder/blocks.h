// The blocks of one forward pass that every Gemma decoder shares, written once against the op
// interface (ops/backend.h): the scaled embedding, the attention sub-block (q/k/v projections,
// per-head norms with RoPE, KV cache writes, attention over each item's cache, the output
// projection closing into the residual stream), the gated MLP sub-block and the final norm and
// head. An architecture's RunOps (model/gemma4/model.cc, model/gemma3/model.cc) calls them in
// its own order and adds what only it has (Gemma 4's per-layer inputs).
//
// Rows of every batch item are stacked: h (the residual stream) and a (the current sub-block's
// normalised input) are [R, H]. Each sub-block ends in one ResidualNorm: o = its output
// projection, h = (h + post_norm(o)) * scale, and a = the next sub-block's pre-norm of h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/causal_lm.h"
#include "model/config.h"
#include "model/decoder/weights.h"
#include "model/step_graphs.h"
#include "ops/backend.h"

namespace g4 {

class DecoderPass {
 public:
  // row_begin: [B + 1], item b's rows are [row_begin[b], row_begin[b + 1]); N: rows with logits.
  // The ids and positions are already in ws.ids / ws.pos.
  DecoderPass(Backend& be, ForwardWorkspace& ws, const ModelConfig& config,
              std::span<const CausalLM::BatchItem> items, const std::vector<int64_t>& row_begin,
              int64_t N);

  Backend& backend() { return be_; }
  ForwardWorkspace& ws() { return ws_; }
  int64_t rows() const { return R_; }
  Buffer<float>& h() { return ws_.h; }

  // h = table[ids] * scale: [R, H].
  Status Embed(const TensorView& table, float scale);
  // a = RmsNorm(h) * w: the first sub-block's input.
  Status PreNorm(const TensorView& w);
  // h += post_attn_norm(o_proj(attend(a))); a = pre_ff_norm(h). Layers that own K/V write the
  // chunk's k/v to each item's cache; KV-shared layers read their donor's view from this pass.
  // inv_freq: the layer's RoPE frequencies in the backend's memory ([head_dim / 2]).
  Status Attention(const LayerConfig& l, const LayerWeights& lw, const float* inv_freq);
  // h = (h + post_ff_norm(down(gelu(gate(a)) * up(a)))) * scale; a = next_norm(h) if given.
  Status Mlp(const LayerWeights& lw, float scale, const TensorView* next_norm);
  // The MLP of a mixture-of-experts layer (Gemma 4 26B-A4B, spec §2.7), r = h on entry:
  // m = post_ff_norm_1(down(gelu(gate(a)) * up(a))) + post_ff_norm_2(experts(pre_ff_norm_2(r)))
  // routed on router_proj(rms(r) * router_scale); h = (r + post_ff_norm(m)) * scale;
  // a = next_norm(h) if given.
  Status MoeMlp(const LayerWeights& lw, float scale, const TensorView* next_norm);
  // h = (h + post_norm(proj(in))) * scale; a = next_norm(h) if given (null: a is untouched).
  void Residual(const TensorView& proj, const float* in, const TensorView& post_norm, float scale,
                const TensorView* next_norm);
  // ws.logits [N, V] = softcap(lm_head(final_norm(h))) for the rows that get logits: each
  // item's last row, or all its rows (gathered so the head is read once for the batch).
  Status Head(const TensorView& final_norm, const TensorView& lm_head, float softcap);
  // Appends h to trace->hidden (a copy to the host).
  Status RecordHidden(ForwardTrace* trace);

 private:
  // ws.gate = gelu(gate_proj(a)) * up_proj(a): [R, I] (ws.up is scratch).
  Status GeluGateUp(const LayerWeights& lw);
  // Residual with proj, or (null) with the sub-block's output already in ws.o.
  void ResidualOf(const TensorView* proj, const float* in, const TensorView& post_norm,
                  float scale, const TensorView* next_norm);
  // Item b is a decode item: one row with its cache (its KV write folds into the norm op).
  bool DecodeItem(size_t b) const {
    return items_[b].cache != nullptr && row_begin_[b + 1] - row_begin_[b] == 1;
  }

  Backend& be_;
  ForwardWorkspace& ws_;
  const ModelConfig& c_;
  std::span<const CausalLM::BatchItem> items_;
  const std::vector<int64_t>& row_begin_;
  int64_t R_ = 0, N_ = 0;
  float eps_ = 0;
  // views_[layer][b]: what item b attends over at a layer that owns K/V (shared layers read
  // their donor's entry).
  std::vector<std::vector<KvView>> views_;
};

}  // namespace g4
