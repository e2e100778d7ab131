// The weights of a Gemma decoder as views into the memory-mapped checkpoint, and the one binder
// that fills them from a tensor list (TensorSlot: name, shape expected from the config, role)
// whatever the file format: a safetensors directory (Hugging Face names under the text prefix,
// linears possibly compressed-tensors pack-quantized W4A16, ../shared/spec/formats.md §1) or a
// GGUF file (llama.cpp's names, decoder/gguf_names.h; block-quantized linears and tables). Each
// architecture lists its own slots (model/gemma4/tensors.h, model/gemma3/tensors.h); the forward
// pass sees the same TensorViews either way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "loader/checkpoint.h"
#include "model/causal_lm.h"
#include "model/config.h"
#include "model/load_options.h"

namespace g4 {

struct LayerWeights {
  TensorView input_norm, post_attn_norm, pre_ff_norm, post_ff_norm;  // [H]
  TensorView q_proj;      // [nq*hd, H]
  TensorView q_norm;      // [hd]
  TensorView k_proj;      // [nkv*hd, H]; empty on KV-shared layers
  TensorView k_norm;      // [hd]; empty on KV-shared layers
  TensorView v_proj;      // [nkv*hd, H]; empty on KV-shared and k_eq_v full layers
  TensorView o_proj;      // [H, nq*hd]
  TensorView gate_proj, up_proj;  // [I, H]
  TensorView down_proj;   // [H, I]
  // Gemma 4 only (empty elsewhere).
  TensorView ple_gate;    // [P, H]   (PLE models only)
  TensorView ple_proj;    // [H, P]
  TensorView ple_norm;    // [H]      post_per_layer_input_norm
  TensorView layer_scalar;  // [1]
  // Gemma 4 MoE layers only (spec §2.7; empty elsewhere).
  TensorView router_proj;          // [E, H]
  TensorView router_scale;         // [H], loaded as router.scale * H^-0.5 (f32)
  TensorView per_expert_scale;     // [E]
  TensorView experts_gate_up;      // [E, 2 * I_moe, H]; the gate stack [E, I_moe, H] when split
  TensorView experts_up;           // [E, I_moe, H] with moe_split_gate_up; else empty
  TensorView experts_down;         // [E, H, I_moe]
  TensorView pre_ff_norm_2, post_ff_norm_1, post_ff_norm_2;  // [H]
};

struct ModelWeights {
  TensorView embed;           // [V, H]; also the tied LM head
  TensorView ple_embed;       // [V_ple, L*P]   (Gemma 4 PLE models only)
  TensorView ple_model_proj;  // [L*P, H]
  TensorView ple_proj_norm;   // [P]
  TensorView final_norm;      // [H]
  // The LM head [V, H]: the tied embedding itself unless a load-time copy (e.g. a quantized
  // one, which `owned` then keeps alive) or a separate output tensor replaces it.
  TensorView lm_head;
  std::vector<LayerWeights> layers;
  std::vector<std::shared_ptr<const void>> owned;  // buffers made at load, if any
};

enum class TensorRole {
  kRequired,  // the model cannot run without it
  kUnused,    // present in released checkpoints (k/v of KV-shared layers) but never read
};

struct TensorSlot {
  std::string name;            // without the text prefix ("model.language_model." / "model.")
  std::vector<int64_t> shape;  // as the config says it must be
  TensorRole role = TensorRole::kRequired;
  TensorView* view = nullptr;  // where a bound tensor goes (null for kUnused)
  // What the tensor is, for binding rules and for initialising synthetic checkpoints.
  // kExperts: a float [E, N, K] stack of one linear per expert (MoE layers).
  enum class Init {
    kLinear, kNorm, kQkNorm, kEmbed, kPleEmbed, kPleGate, kLayerScalar, kExperts
  } init = Init::kLinear;
  int64_t experts_read = 0;  // kExperts: how many of the E experts a token reads (top-k)

  // A linear layer's [N, K] weight: the tensors a pack-quantized checkpoint may store quantized
  // (NAME minus ".weight" + ".weight_packed" / ".weight_scale" / ".weight_shape").
  bool linear() const { return init == Init::kLinear || init == Init::kPleGate; }
  // An embedding table: gathered one row per token.
  bool table() const { return init == Init::kEmbed || init == Init::kPleEmbed; }
  // The module name: `name` without its ".weight" suffix.
  std::string module() const;
};

// Appends a slot to *slots; a kUnused slot keeps no view.
void AddSlot(std::vector<TensorSlot>* slots, std::string name, std::vector<int64_t> shape,
             TensorView* view, TensorSlot::Init init, TensorRole role = TensorRole::kRequired);

// The tensors of layer `l` that every Gemma decoder has, in checkpoint order: the four sandwich
// norms, q/k/v/o with q_norm and k_norm, and the gated MLP (names "layers.N.self_attn.q_proj.
// weight", ...). KV-shared layers' k/v are kUnused; no v_proj without l.has_v_proj. `lw` may be
// null (names and shapes only).
void AppendLayerTensors(const LayerConfig& l, int64_t hidden, LayerWeights* lw,
                        std::vector<TensorSlot>* slots);

// The prefix of the text decoder's tensors in a safetensors checkpoint: "model.language_model."
// or "language_model.model." (multimodal checkpoints) or "model." (text-only), found by looking
// for `probe` (a slot name, e.g. "embed_tokens.weight") under each.
StatusOr<std::string> FindTextPrefix(const WeightStore& store, const std::string& probe);

// Binds every required slot of `slots` from `checkpoint`, checking presence, dtype and exact
// shape (for a quantized linear: weight_packed, weight_scale and weight_shape against the
// config's [N, K] and the checkpoint's quantization_config), then makes the LM head the options
// ask for: a GGUF output.weight when the file has one, else the tied embedding or a quantized
// copy of it (MakeLmHead). Errors name the tensor, the file and the expected and found shapes.
// GGUF tensors no slot reads are logged (at most five). `slots` must point into *w.
Status BindCheckpoint(const Checkpoint& checkpoint, const std::vector<TensorSlot>& slots,
                      const LoadOptions& options, ModelWeights* w);

// The validation every file format shares: binds `t` (tensor `name` of `file`) to `slot` if it
// is a float tensor, or a GGUF block-quantized linear or embedding, of exactly slot.shape.
// Errors name the tensor and the file, and give the expected shape and where it came from
// (`shape_source`, e.g. "config.json").
Status BindView(const TensorSlot& slot, const std::string& name, const std::string& file,
                const TensorView& t, const char* shape_source);

// Points every bound linear of `slots` and w->lm_head at the panels options.pack_weight makes
// for them (QuantInfo::panels, kept alive by w->owned) and releases the mapped pages they were
// packed from; head_copied: w->lm_head is a copy made at load (MakeLmHead), whose rows stay.
// Nothing without a packer; weights it returns no panels for stay as loaded.
void PackWeights(const std::vector<TensorSlot>& slots, const LoadOptions& options,
                 bool head_copied, ModelWeights* w);

// Points w->lm_head at the tied embedding (kAsStored) or at a quantized copy of it kept alive by
// w->owned (kQ8, kQ4). kAuto: kQ8 when any linear is quantized (W4A16) and the embedding is not
// already int8 blocks, else kAsStored; on a device (options.device) always kAsStored.
Status MakeLmHead(ModelWeights* w, const LoadOptions& options);

// The weights of `slots` (bound, required ones) as CausalLM::Weights() lists them.
std::vector<WeightEntry> WeightEntries(const std::vector<TensorSlot>& slots);

// A load-time copy of the float vector `t` with `offset` added to every element, as f32, kept
// alive by w->owned: Hugging Face Gemma 1-3 RMSNorm weights are stored as w with x * (1 + w)
// computed at run time, which g4's RmsNorm (x * w) runs as x * (1 + w) stored.
StatusOr<TensorView> OffsetCopy(const TensorView& t, float offset, ModelWeights* w);
// The same with every element multiplied by `factor` (no offset).
StatusOr<TensorView> ScaledCopy(const TensorView& t, float factor, ModelWeights* w);

}  // namespace g4
