// The Gemma 4 text decoder's weights as views into the memory-mapped checkpoint, and the one
// list of tensors (name, shape expected from the config, role) that drives loading,
// validation and the synthetic checkpoint writer alike. Linear layers may be stored
// quantized (compressed-tensors pack-quantized W4A16, ../shared/spec/formats.md §1): they are
// bound as quantized TensorViews with the logical [N, K] shape, so the forward pass is the same.
#pragma once

#include <memory>
#include <optional>
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

  // A linear layer's [N, K] weight: the tensors a pack-quantized checkpoint may store quantized
  // (NAME minus ".weight" + ".weight_packed" / ".weight_scale" / ".weight_shape").
  bool linear() const { return init == Init::kLinear || init == Init::kPleGate; }
  // The module name: `name` without its ".weight" suffix.
  std::string module() const;
};

// Every tensor of the text decoder for `config`, in checkpoint order. `w` may be null when only
// the names and shapes are wanted; otherwise slots point into *w (which must outlive them).
std::vector<TensorSlot> ListTensors(const ModelConfig& config, ModelWeights* w);

// The prefix of the text decoder's tensors in this store: "model.language_model." (released
// multimodal checkpoints) or "model." (text-only), found by looking for embed_tokens.weight.
StatusOr<std::string> FindTextPrefix(const WeightStore& store);

// The LM head used at run time. The tied embedding is bf16 in every released checkpoint (the
// W4A16 exports leave it unquantized): 262144 x 1536 x 2 B = 0.8 GB read per decoded token on
// E2B, the largest single tensor. A quantized copy made at load cuts that (docs/speed.md has the
// bytes, the speed and the logits error of each choice).
enum class HeadMode {
  kAuto,      // kQ8 when the checkpoint has quantized linears (W4A16), else kAsStored
  kAsStored,  // the tied embedding itself, no copy ("bf16")
  kQ8,        // int8, one f32 scale per row (0.40 GB on E2B)
  kQ4,        // int4, groups of 32, bf16 scales: the W4A16 scheme (0.23 GB on E2B)
};
// "auto" | "bf16" | "q8" | "q4"; InvalidArgument naming the accepted values otherwise.
StatusOr<HeadMode> ParseHeadMode(const std::string& name);
const char* HeadModeName(HeadMode mode);

struct WeightLoadOptions {
  std::optional<HeadMode> head;  // unset: the process default (SetDefaultHeadMode)
  int threads = 0;               // for load-time copies; <= 0: all cores
};

// The head mode BindWeights uses when WeightLoadOptions::head is unset (initially kAuto). Lets a
// front end choose it for loaders that take no options (Gemma4Model::Load); not thread-safe
// against concurrent loads.
void SetDefaultHeadMode(HeadMode mode);
HeadMode DefaultHeadMode();
// The head mode on a GPU backend: kAuto becomes kAsStored there, because the q8 copy kAuto picks
// for W4A16 checkpoints is an int8-per-row matmul the device kernels do not define (it would run
// on the host, every step), while the stored bf16 head runs on the device. Explicit modes stay.
HeadMode HeadModeForDevice(HeadMode requested);

// Binds every required tensor to a view, checking presence, dtype and exact shape (for a
// quantized linear: weight_packed, weight_scale and weight_shape against the config's [N, K] and
// the checkpoint's quantization_config), then makes the LM head the options ask for. Errors name
// the tensor and the expected and found shapes.
Status BindWeights(const ModelConfig& config, const WeightStore& store, ModelWeights* w,
                   const WeightLoadOptions& options = {});

// The validation every file format shares: binds `t` (tensor `name` of `file`) to `slot` if it
// is a float tensor, or a GGUF block-quantized linear or embedding, of exactly slot.shape.
// Errors name the tensor and the file, and give the expected shape and where it came from
// (`shape_source`, e.g. "config.json").
Status BindView(const TensorSlot& slot, const std::string& name, const std::string& file,
                const TensorView& t, const char* shape_source);

// Points w->lm_head at the tied embedding (kAsStored) or at a quantized copy of it kept alive by
// w->owned (kQ8, kQ4). kAuto resolves as documented above, from w's linears (kAsStored when the
// embedding itself is GGUF block-quantized).
Status MakeLmHead(ModelWeights* w, HeadMode mode, int threads = 0);

// Bytes of weights one decode step reads: every bound tensor the forward pass streams (linears,
// norms, the LM head as bound), plus one row of each embedding table (a gather, not a stream).
// Quantized tensors count their packed bytes and scales.
uint64_t DecodeWeightBytes(const ModelConfig& config, const ModelWeights& w);

}  // namespace g4
