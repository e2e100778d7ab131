// The tensor list and weight binding (see weights.h). Quantized linears follow
// ../shared/spec/formats.md §1.2-1.6: presence of P.weight_packed decides, per tensor, whether P is
// quantized; its shapes are checked against the config's [N, K] and quantization_config's group.
#include "model/weights.h"

#include <atomic>
#include <cstring>
#include <filesystem>

#include "loader/compressed_tensors.h"
#include "loader/page_advice.h"
#include "ops/quantize.h"

namespace g4 {

std::string TensorSlot::module() const {
  constexpr std::string_view kSuffix = ".weight";
  if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
    return name.substr(0, name.size() - kSuffix.size());
  }
  return name;
}

std::vector<TensorSlot> ListTensors(const ModelConfig& c, ModelWeights* w) {
  using Init = TensorSlot::Init;
  const int64_t H = c.hidden_size, V = c.vocab_size, L = c.num_layers, P = c.ple_width;
  std::vector<TensorSlot> s;
  auto add = [&s](std::string name, std::vector<int64_t> shape, TensorView* view, Init init,
                  TensorRole role = TensorRole::kRequired) {
    s.push_back(TensorSlot{std::move(name), std::move(shape), role,
                           role == TensorRole::kRequired ? view : nullptr, init});
  };
  if (w) w->layers.resize(static_cast<size_t>(L));
  auto at = [w](TensorView ModelWeights::*m) { return w ? &(w->*m) : nullptr; };

  add("embed_tokens.weight", {V, H}, at(&ModelWeights::embed), Init::kEmbed);
  if (P > 0) {
    add("embed_tokens_per_layer.weight", {c.ple_vocab, L * P}, at(&ModelWeights::ple_embed),
        Init::kPleEmbed);
    add("per_layer_model_projection.weight", {L * P, H}, at(&ModelWeights::ple_model_proj),
        Init::kLinear);
    add("per_layer_projection_norm.weight", {P}, at(&ModelWeights::ple_proj_norm), Init::kNorm);
  }
  add("norm.weight", {H}, at(&ModelWeights::final_norm), Init::kNorm);

  for (const LayerConfig& l : c.layers) {
    LayerWeights* lw = w ? &w->layers[static_cast<size_t>(l.index)] : nullptr;
    auto v = [lw](TensorView LayerWeights::*m) { return lw ? &(lw->*m) : nullptr; };
    const std::string p = "layers." + std::to_string(l.index) + ".";
    const int64_t hd = l.head_dim, q_out = int64_t{l.n_heads} * hd, kv_out = int64_t{l.n_kv_heads} * hd;
    const int64_t I = l.mlp_width;
    // KV-shared layers carry k/v tensors in released files; they must never be read.
    const TensorRole kv_role = l.kv_shared() ? TensorRole::kUnused : TensorRole::kRequired;
    add(p + "input_layernorm.weight", {H}, v(&LayerWeights::input_norm), Init::kNorm);
    add(p + "post_attention_layernorm.weight", {H}, v(&LayerWeights::post_attn_norm), Init::kNorm);
    add(p + "pre_feedforward_layernorm.weight", {H}, v(&LayerWeights::pre_ff_norm), Init::kNorm);
    add(p + "post_feedforward_layernorm.weight", {H}, v(&LayerWeights::post_ff_norm), Init::kNorm);
    add(p + "self_attn.q_proj.weight", {q_out, H}, v(&LayerWeights::q_proj), Init::kLinear);
    add(p + "self_attn.q_norm.weight", {hd}, v(&LayerWeights::q_norm), Init::kQkNorm);
    add(p + "self_attn.k_proj.weight", {kv_out, H}, v(&LayerWeights::k_proj), Init::kLinear, kv_role);
    add(p + "self_attn.k_norm.weight", {hd}, v(&LayerWeights::k_norm), Init::kQkNorm, kv_role);
    if (l.has_v_proj) {
      add(p + "self_attn.v_proj.weight", {kv_out, H}, v(&LayerWeights::v_proj), Init::kLinear,
          kv_role);
    }
    add(p + "self_attn.o_proj.weight", {H, q_out}, v(&LayerWeights::o_proj), Init::kLinear);
    add(p + "mlp.gate_proj.weight", {I, H}, v(&LayerWeights::gate_proj), Init::kLinear);
    add(p + "mlp.up_proj.weight", {I, H}, v(&LayerWeights::up_proj), Init::kLinear);
    add(p + "mlp.down_proj.weight", {H, I}, v(&LayerWeights::down_proj), Init::kLinear);
    if (P > 0) {
      add(p + "per_layer_input_gate.weight", {P, H}, v(&LayerWeights::ple_gate), Init::kPleGate);
      add(p + "per_layer_projection.weight", {H, P}, v(&LayerWeights::ple_proj), Init::kLinear);
      add(p + "post_per_layer_input_norm.weight", {H}, v(&LayerWeights::ple_norm), Init::kNorm);
    }
    add(p + "layer_scalar", {1}, v(&LayerWeights::layer_scalar), Init::kLayerScalar);
  }
  return s;
}

StatusOr<std::string> FindTextPrefix(const WeightStore& store) {
  for (const char* prefix : {"model.language_model.", "model."}) {
    if (store.Find(std::string(prefix) + "embed_tokens.weight")) return std::string(prefix);
  }
  return NotFound("missing tensor model.language_model.embed_tokens.weight (also looked for "
                  "model.embed_tokens.weight): not a Gemma 4 text checkpoint?");
}

namespace {

std::atomic<HeadMode> g_default_head{HeadMode::kAuto};

// "I32 [2048, 192]" for messages.
std::string Describe(const TensorInfo& t) {
  return std::string(DTypeName(t.dtype)) + " " + ShapeToString(t.shape);
}

// A plain float tensor bound to `slot`.
Status BindFloat(const TensorSlot& slot, const std::string& name, const TensorInfo& t) {
  return BindView(slot, name, t.file, t.view(), "config.json");
}

// The pack-quantized linear `module` (weight_packed `packed`) bound to `slot` ([N, K]).
Status BindPacked(const TensorSlot& slot, const std::string& module, const TensorInfo& packed,
                  const WeightStore& store, const std::optional<CompressedTensorsConfig>& qc) {
  const std::string packed_name = module + kWeightPackedSuffix;
  if (!qc) {
    return InvalidArgument("tensor " + packed_name + " (" + packed.file +
                           ") is pack-quantized but config.json has no quantization_config");
  }
  for (const char* suffix : {kWeightZeroPointSuffix, kWeightGIdxSuffix}) {
    if (store.Find(module + suffix)) {
      return Unimplemented("tensor " + module + suffix + " present: " +
                           (std::string_view(suffix) == kWeightGIdxSuffix
                                ? "act-order (g_idx) checkpoints are not supported"
                                : "asymmetric (zero-point) checkpoints are not supported"));
    }
  }
  const int64_t N = slot.shape[0], K = slot.shape[1];
  const int64_t words = (K * qc->num_bits + 31) / 32;  // int32 words per row
  if (packed.dtype != DType::kI32 || packed.shape != std::vector<int64_t>{N, words}) {
    return InvalidArgument("tensor " + packed_name + " (" + packed.file + ") is " +
                           Describe(packed) + "; expected I32 " + ShapeToString({N, words}) +
                           " (" + std::to_string(qc->num_bits) + "-bit " +
                           ShapeToString(slot.shape) + " from config.json)");
  }
  const int64_t group = qc->GroupSizeFor(K);
  if (group <= 0 || K % group != 0) {
    return Unimplemented("tensor " + packed_name + ": group_size " + std::to_string(group) +
                         " from quantization_config does not divide the input width " +
                         std::to_string(K));
  }
  const std::string scale_name = module + kWeightScaleSuffix;
  const TensorInfo* scale = store.Find(scale_name);
  if (!scale) return NotFound("missing tensor " + scale_name + " (beside " + packed_name + ")");
  const std::vector<int64_t> scale_shape{N, K / group};
  if (!IsFloat(scale->dtype) || scale->shape != scale_shape) {
    return InvalidArgument("tensor " + scale_name + " (" + scale->file + ") is " +
                           Describe(*scale) + "; expected F32/BF16/F16 " +
                           ShapeToString(scale_shape) + " (group_size " + std::to_string(group) +
                           ")");
  }
  const std::string shape_name = module + kWeightShapeSuffix;
  if (const TensorInfo* ws = store.Find(shape_name)) {  // always written; honoured when present
    const bool int_dtype = ws->dtype == DType::kI64 || ws->dtype == DType::kI32;
    int64_t v[2] = {-1, -1};
    if (int_dtype && ws->shape == std::vector<int64_t>{2}) {
      // Byte copies: a safetensors tensor may sit at any byte offset.
      const auto* bytes = static_cast<const unsigned char*>(ws->data);
      for (int i = 0; i < 2; ++i) {
        if (ws->dtype == DType::kI64) {
          std::memcpy(&v[i], bytes + i * 8, 8);
        } else {
          int32_t x;
          std::memcpy(&x, bytes + i * 4, 4);
          v[i] = x;
        }
      }
    }
    if (v[0] != N || v[1] != K) {
      return InvalidArgument("tensor " + shape_name + " (" + ws->file + ") is " + Describe(*ws) +
                             " holding [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) +
                             "]; expected I64 [2] holding " + ShapeToString(slot.shape) +
                             " from config.json");
    }
  }
  *slot.view = TensorView(packed.data, DType::kU8, slot.shape,
                          QuantInfo{QuantKind::kInt4Group, scale->data, scale->dtype, group,
                                    words * 4});
  return Status::Ok();
}

bool AnyQuantizedLinear(const ModelWeights& w) {
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* v : {&l.q_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      if (v->quantized()) return true;
    }
  }
  return w.ple_model_proj.quantized();
}

}  // namespace

StatusOr<HeadMode> ParseHeadMode(const std::string& name) {
  if (name == "auto") return HeadMode::kAuto;
  if (name == "bf16" || name == "as-stored") return HeadMode::kAsStored;
  if (name == "q8") return HeadMode::kQ8;
  if (name == "q4") return HeadMode::kQ4;
  return InvalidArgument("unknown head mode '" + name + "' (expected auto, bf16, q8, q4)");
}

HeadMode HeadModeForDevice(HeadMode requested) {
  return requested == HeadMode::kAuto ? HeadMode::kAsStored : requested;
}

const char* HeadModeName(HeadMode mode) {
  switch (mode) {
    case HeadMode::kAuto: return "auto";
    case HeadMode::kAsStored: return "bf16";
    case HeadMode::kQ8: return "q8";
    case HeadMode::kQ4: return "q4";
  }
  return "?";
}

void SetDefaultHeadMode(HeadMode mode) { g_default_head.store(mode); }
HeadMode DefaultHeadMode() { return g_default_head.load(); }

Status BindWeights(const ModelConfig& config, const WeightStore& store, ModelWeights* w,
                   const WeightLoadOptions& options) {
  G4_ASSIGN_OR_RETURN(const std::string prefix, FindTextPrefix(store));
  // quantization_config lives in the config.json beside the weights (the store's directory).
  std::optional<CompressedTensorsConfig> qc;
  if (!store.files().empty()) {
    const std::string dir = std::filesystem::path(store.files().front()).parent_path().string();
    G4_ASSIGN_OR_RETURN(qc, LoadQuantizationConfig(dir.empty() ? "." : dir));
  }
  for (const TensorSlot& slot : ListTensors(config, w)) {
    if (slot.role != TensorRole::kRequired) continue;
    const std::string name = prefix + slot.name;
    const std::string module = prefix + slot.module();
    if (const TensorInfo* packed = store.Find(module + kWeightPackedSuffix)) {
      if (!slot.linear()) {
        return Unimplemented("tensor " + module + kWeightPackedSuffix +
                             ": only linear layers may be quantized (g4 reads " + name +
                             " as a float tensor)");
      }
      G4_RETURN_IF_ERROR(BindPacked(slot, module, *packed, store, qc));
      continue;
    }
    const TensorInfo* t = store.Find(name);
    if (!t) return NotFound("missing tensor " + name);
    G4_RETURN_IF_ERROR(BindFloat(slot, name, *t));
  }
  G4_RETURN_IF_ERROR(MakeLmHead(w, options.head.value_or(DefaultHeadMode()), options.threads));
  if (w->lm_head.data != w->embed.data) {
    // The mapped embedding is now only gathered (one row per token): drop the pages the
    // quantizer read from this process's resident set (they stay in the page cache).
    ReleaseMappedPages(w->embed.data, w->embed.nbytes());
  }
  return Status::Ok();
}

Status MakeLmHead(ModelWeights* w, HeadMode mode, int threads) {
  if (mode == HeadMode::kAuto) {
    // With quantized linears the head is the biggest decode stream left: an int8 copy is
    // faster to stream than bf16, and than Q6_K / Q4_K blocks too (their unpacking costs more
    // than the bytes they save; docs/speed.md). Q8_0 blocks are already int8, kept as stored.
    const bool stored_is_int8 = w->embed.quantized() && w->embed.quant.kind == QuantKind::kQ8_0;
    mode = AnyQuantizedLinear(*w) && !stored_is_int8 ? HeadMode::kQ8 : HeadMode::kAsStored;
  }
  // Tied (spec §2.9): a lm_head.weight in the file is a duplicate of the embedding.
  w->lm_head = w->embed;
  if (mode == HeadMode::kAsStored) return Status::Ok();
  ThreadPool pool(threads);
  const bool q8 = mode == HeadMode::kQ8;
  auto q = QuantizeWeight(pool, w->embed, q8 ? QuantKind::kInt8Group : QuantKind::kInt4Group,
                          q8 ? w->embed.dim(1) : 32, q8 ? DType::kF32 : DType::kBF16);
  if (!q.ok()) return q.status().WithContext("quantizing the LM head");
  w->lm_head = q->view;
  w->owned.push_back(q->storage);
  return Status::Ok();
}

Status BindView(const TensorSlot& slot, const std::string& name, const std::string& file,
                const TensorView& t, const char* shape_source) {
  if (t.quantized()) {
    // GGUF block weights: linears and the embedding tables (gathered row by row).
    const bool may_quantize = slot.linear() || slot.init == TensorSlot::Init::kEmbed ||
                              slot.init == TensorSlot::Init::kPleEmbed;
    if (!may_quantize || !IsGgufBlock(t.quant.kind)) {
      return Unimplemented("tensor " + name + " (" + file + ") is stored as " + StorageName(t) +
                           "; g4 reads it only as F32, BF16 or F16");
    }
  } else if (!IsFloat(t.dtype)) {
    return InvalidArgument("tensor " + name + " (" + file + ") has dtype " +
                           DTypeName(t.dtype) + "; expected F32, BF16 or F16");
  }
  if (t.shape != slot.shape) {
    return InvalidArgument("tensor " + name + " (" + file + ") has shape " +
                           ShapeToString(t.shape) + "; expected " + ShapeToString(slot.shape) +
                           " from " + shape_source);
  }
  *slot.view = t;
  return Status::Ok();
}

uint64_t DecodeWeightBytes(const ModelConfig& config, const ModelWeights& w) {
  ModelWeights copy = w;  // ListTensors points slots into the struct it is given
  uint64_t bytes = 0;
  for (const TensorSlot& s : ListTensors(config, &copy)) {
    if (!s.view || s.view->empty()) continue;
    if (s.init == TensorSlot::Init::kEmbed || s.init == TensorSlot::Init::kPleEmbed) {
      bytes += s.view->nbytes() / static_cast<uint64_t>(s.view->dim(0));  // one row
    } else {
      bytes += s.view->nbytes() + s.view->scale_nbytes();
    }
  }
  return bytes + w.lm_head.nbytes() + w.lm_head.scale_nbytes();
}

}  // namespace g4
