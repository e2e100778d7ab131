// The Gemma 4 text decoder's weights as views into the memory-mapped checkpoint, and the one
// list of tensors (name, shape expected from the config, role) that drives loading,
// validation and the synthetic checkpoint writer alike.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "loader/weight_store.h"
#include "model/config.h"

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
  TensorView ple_gate;    // [P, H]   (PLE models only)
  TensorView ple_proj;    // [H, P]
  TensorView ple_norm;    // [H]      post_per_layer_input_norm
  TensorView layer_scalar;  // [1]
};

struct ModelWeights {
  TensorView embed;           // [V, H]; also the tied LM head
  TensorView ple_embed;       // [V_ple, L*P]
  TensorView ple_model_proj;  // [L*P, H]
  TensorView ple_proj_norm;   // [P]
  TensorView final_norm;      // [H]
  // The LM head [V, H]: the tied embedding itself unless a load-time copy (e.g. a quantized
  // one, which `owned` then keeps alive) replaces it.
  TensorView lm_head;
  std::vector<LayerWeights> layers;
  std::vector<std::shared_ptr<const void>> owned;  // buffers made at load, if any
};

enum class TensorRole {
  kRequired,  // the model cannot run without it
  kUnused,    // present in released checkpoints (k/v of KV-shared layers) but never read
};

struct TensorSlot {
  std::string name;            // without the "model.language_model." / "model." prefix
  std::vector<int64_t> shape;  // as the config says it must be
  TensorRole role = TensorRole::kRequired;
  TensorView* view = nullptr;  // where a bound tensor goes (null for kUnused)
  // What the tensor is, for initialising synthetic checkpoints.
  enum class Init { kLinear, kNorm, kQkNorm, kEmbed, kPleEmbed, kPleGate, kLayerScalar } init =
      Init::kLinear;
};

// Every tensor of the text decoder for `config`, in checkpoint order. `w` may be null when only
// the names and shapes are wanted; otherwise slots point into *w (which must outlive them).
std::vector<TensorSlot> ListTensors(const ModelConfig& config, ModelWeights* w);

// The prefix of the text decoder's tensors in this store: "model.language_model." (released
// multimodal checkpoints) or "model." (text-only), found by looking for embed_tokens.weight.
StatusOr<std::string> FindTextPrefix(const WeightStore& store);

// Binds every required tensor to a view, checking presence, float dtype and exact shape.
// Errors name the tensor and the expected and found shapes.
Status BindWeights(const ModelConfig& config, const WeightStore& store, ModelWeights* w);

}  // namespace g4
