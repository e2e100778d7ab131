// The one weight binder (see weights.h). Quantized linears follow
// ../shared/spec/formats.md §1.2-1.6: presence of P.weight_packed decides, per tensor, whether P
// is quantized; its shapes are checked against the config's [N, K] and quantization_config's
// group. GGUF files name their tensors as llama.cpp does (gguf_names.h).
#include "model/decoder/weights.h"

#include <cstring>
#include <set>

#include "core/log.h"
#include "core/q8_blocks.h"
#include "core/thread_pool.h"
#include "loader/compressed_tensors.h"
#include "loader/page_advice.h"
#include "model/decoder/gguf_names.h"
#include "ops/quantize.h"

namespace g4 {

std::string TensorSlot::module() const {
  constexpr std::string_view kSuffix = ".weight";
  if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
    return name.substr(0, name.size() - kSuffix.size());
  }
  return name;
}

void AddSlot(std::vector<TensorSlot>* slots, std::string name, std::vector<int64_t> shape,
             TensorView* view, TensorSlot::Init init, TensorRole role) {
  slots->push_back(TensorSlot{std::move(name), std::move(shape), role,
                              role == TensorRole::kRequired ? view : nullptr, init});
}

void AppendLayerTensors(const LayerConfig& l, int64_t H, LayerWeights* lw,
                        std::vector<TensorSlot>* s) {
  using Init = TensorSlot::Init;
  auto v = [lw](TensorView LayerWeights::*m) { return lw ? &(lw->*m) : nullptr; };
  const std::string p = "layers." + std::to_string(l.index) + ".";
  const int64_t hd = l.head_dim, q_out = int64_t{l.n_heads} * hd,
                kv_out = int64_t{l.n_kv_heads} * hd, I = l.mlp_width;
  // KV-shared layers carry k/v tensors in released files; they must never be read.
  const TensorRole kv_role = l.kv_shared() ? TensorRole::kUnused : TensorRole::kRequired;
  AddSlot(s, p + "input_layernorm.weight", {H}, v(&LayerWeights::input_norm), Init::kNorm);
  AddSlot(s, p + "post_attention_layernorm.weight", {H}, v(&LayerWeights::post_attn_norm),
          Init::kNorm);
  AddSlot(s, p + "pre_feedforward_layernorm.weight", {H}, v(&LayerWeights::pre_ff_norm),
          Init::kNorm);
  AddSlot(s, p + "post_feedforward_layernorm.weight", {H}, v(&LayerWeights::post_ff_norm),
          Init::kNorm);
  AddSlot(s, p + "self_attn.q_proj.weight", {q_out, H}, v(&LayerWeights::q_proj), Init::kLinear);
  AddSlot(s, p + "self_attn.q_norm.weight", {hd}, v(&LayerWeights::q_norm), Init::kQkNorm);
  AddSlot(s, p + "self_attn.k_proj.weight", {kv_out, H}, v(&LayerWeights::k_proj), Init::kLinear,
          kv_role);
  AddSlot(s, p + "self_attn.k_norm.weight", {hd}, v(&LayerWeights::k_norm), Init::kQkNorm,
          kv_role);
  if (l.has_v_proj) {
    AddSlot(s, p + "self_attn.v_proj.weight", {kv_out, H}, v(&LayerWeights::v_proj),
            Init::kLinear, kv_role);
  }
  AddSlot(s, p + "self_attn.o_proj.weight", {H, q_out}, v(&LayerWeights::o_proj), Init::kLinear);
  AddSlot(s, p + "mlp.gate_proj.weight", {I, H}, v(&LayerWeights::gate_proj), Init::kLinear);
  AddSlot(s, p + "mlp.up_proj.weight", {I, H}, v(&LayerWeights::up_proj), Init::kLinear);
  AddSlot(s, p + "mlp.down_proj.weight", {H, I}, v(&LayerWeights::down_proj), Init::kLinear);
}

StatusOr<std::string> FindTextPrefix(const WeightStore& store, const std::string& probe) {
  // Multimodal checkpoints: transformers >= 4.52 names the text decoder
  // "model.language_model."; released Gemma 3 files (and transformers' saves of them) keep the
  // older "language_model.model.". Text-only checkpoints: "model.".
  for (const char* prefix : {"model.language_model.", "language_model.model.", "model."}) {
    if (store.Find(std::string(prefix) + probe)) return std::string(prefix);
  }
  return NotFound("missing tensor model.language_model." + probe + " (also looked for " +
                  "language_model.model." + probe + " and model." + probe +
                  "): not a text checkpoint of this architecture?");
}

namespace {

// "I32 [2048, 192]" for messages.
std::string Describe(const TensorInfo& t) {
  return std::string(DTypeName(t.dtype)) + " " + ShapeToString(t.shape);
}

// The tensor names of one pack-quantized weight: a linear's MODULE.weight_packed, ...; an MoE
// expert stack's NAME_packed, NAME_scale, NAME_shape (the Gemma 4 26B export keeps the fused
// experts.gate_up_proj / experts.down_proj stacks, packed slice by slice along dim 0).
struct PackedNames {
  std::string packed, scale, shape, zero_point, g_idx;
};

PackedNames PackedNamesOf(const TensorSlot& slot, const std::string& prefix) {
  if (slot.init == TensorSlot::Init::kExperts) {
    const std::string n = prefix + slot.name;
    return {n + "_packed", n + "_scale", n + "_shape", n + "_zero_point", n + "_g_idx"};
  }
  const std::string m = prefix + slot.module();
  return {m + kWeightPackedSuffix, m + kWeightScaleSuffix, m + kWeightShapeSuffix,
          m + kWeightZeroPointSuffix, m + kWeightGIdxSuffix};
}

// `shape` with its last dimension replaced by `last`.
std::vector<int64_t> WithLast(std::vector<int64_t> shape, int64_t last) {
  shape.back() = last;
  return shape;
}

// The pack-quantized weight `names` (weight_packed `packed`) bound to `slot`: a linear [N, K]
// or an expert stack [E, N, K], packed row by row along K.
Status BindPacked(const TensorSlot& slot, const PackedNames& names, const TensorInfo& packed,
                  const WeightStore& store, const std::optional<CompressedTensorsConfig>& qc) {
  const std::string& packed_name = names.packed;
  if (!qc) {
    return InvalidArgument("tensor " + packed_name + " (" + packed.file +
                           ") is pack-quantized but config.json has no quantization_config");
  }
  if (store.Find(names.zero_point)) {
    return Unimplemented("tensor " + names.zero_point +
                         " present: asymmetric (zero-point) checkpoints are not supported");
  }
  if (store.Find(names.g_idx)) {
    return Unimplemented("tensor " + names.g_idx +
                         " present: act-order (g_idx) checkpoints are not supported");
  }
  const int64_t K = slot.shape.back();
  const int64_t words = (K * qc->num_bits + 31) / 32;  // int32 words per row
  const std::vector<int64_t> packed_shape = WithLast(slot.shape, words);
  if (packed.dtype != DType::kI32 || packed.shape != packed_shape) {
    return InvalidArgument("tensor " + packed_name + " (" + packed.file + ") is " +
                           Describe(packed) + "; expected I32 " + ShapeToString(packed_shape) +
                           " (" + std::to_string(qc->num_bits) + "-bit " +
                           ShapeToString(slot.shape) + " from config.json)");
  }
  const int64_t group = qc->GroupSizeFor(K);
  if (group <= 0 || K % group != 0) {
    return Unimplemented("tensor " + packed_name + ": group_size " + std::to_string(group) +
                         " from quantization_config does not divide the input width " +
                         std::to_string(K));
  }
  const TensorInfo* scale = store.Find(names.scale);
  if (!scale) return NotFound("missing tensor " + names.scale + " (beside " + packed_name + ")");
  const std::vector<int64_t> scale_shape = WithLast(slot.shape, K / group);
  if (!IsFloat(scale->dtype) || scale->shape != scale_shape) {
    return InvalidArgument("tensor " + names.scale + " (" + scale->file + ") is " +
                           Describe(*scale) + "; expected F32/BF16/F16 " +
                           ShapeToString(scale_shape) + " (group_size " + std::to_string(group) +
                           ")");
  }
  if (const TensorInfo* ws = store.Find(names.shape)) {  // always written; honoured when present
    const bool int_dtype = ws->dtype == DType::kI64 || ws->dtype == DType::kI32;
    const int64_t rank = static_cast<int64_t>(slot.shape.size());
    std::vector<int64_t> v(slot.shape.size(), -1);
    if (int_dtype && ws->shape == std::vector<int64_t>{rank}) {
      // Byte copies: a safetensors tensor may sit at any byte offset.
      const auto* bytes = static_cast<const unsigned char*>(ws->data);
      for (size_t i = 0; i < v.size(); ++i) {
        if (ws->dtype == DType::kI64) {
          std::memcpy(&v[i], bytes + i * 8, 8);
        } else {
          int32_t x;
          std::memcpy(&x, bytes + i * 4, 4);
          v[i] = x;
        }
      }
    }
    if (v != slot.shape) {
      return InvalidArgument("tensor " + names.shape + " (" + ws->file + ") is " + Describe(*ws) +
                             " holding " + ShapeToString(v) + "; expected I64 [" +
                             std::to_string(rank) + "] holding " + ShapeToString(slot.shape) +
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

// Binds the slots from a safetensors directory (Hugging Face names under the text prefix).
Status BindSafetensors(const Checkpoint& ckpt, const std::vector<TensorSlot>& slots) {
  const WeightStore& store = *ckpt.store();
  G4_ASSIGN_OR_RETURN(const std::string prefix, FindTextPrefix(store, slots.front().name));
  std::optional<CompressedTensorsConfig> qc;
  if (ckpt.config()) {
    G4_ASSIGN_OR_RETURN(qc, ParseQuantizationConfig(*ckpt.config(), ckpt.FilePath("config.json")));
  }
  for (const TensorSlot& slot : slots) {
    if (slot.role != TensorRole::kRequired) continue;
    const std::string name = prefix + slot.name;
    const PackedNames names = PackedNamesOf(slot, prefix);
    if (const TensorInfo* packed = store.Find(names.packed)) {
      if (!slot.linear() && slot.init != TensorSlot::Init::kExperts) {
        return Unimplemented("tensor " + names.packed +
                             ": only linear layers and expert stacks may be quantized (g4 "
                             "reads " + name + " as a float tensor)");
      }
      G4_RETURN_IF_ERROR(BindPacked(slot, names, *packed, store, qc));
      continue;
    }
    const TensorInfo* t = store.Find(name);
    if (!t) return NotFound("missing tensor " + name);
    G4_RETURN_IF_ERROR(BindView(slot, name, t->file, t->view(), "config.json"));
  }
  return Status::Ok();
}

// Binds the slots from a GGUF file (llama.cpp's names); warns of tensors no slot reads.
// Returns whether the file has its own output.weight (an untied head), bound to w->lm_head.
StatusOr<bool> BindGguf(const Checkpoint& ckpt, const std::vector<TensorSlot>& slots,
                        ModelWeights* w) {
  const GgufFile& file = *ckpt.gguf();
  std::set<std::string> used(std::begin(kGgufConfigTensors), std::end(kGgufConfigTensors));
  for (const TensorSlot& slot : slots) {
    const std::string name = GgufTensorName(slot.name);
    if (name.empty()) return Internal("no GGUF name for tensor slot " + slot.name);
    used.insert(name);
    if (slot.role != TensorRole::kRequired) continue;
    const GgufTensorInfo* t = file.Find(name);
    if (!t) return NotFound(file.path() + ": missing tensor '" + name + "'");
    G4_ASSIGN_OR_RETURN(const TensorView view, GgufFile::View(*t, file.path()));
    G4_RETURN_IF_ERROR(BindView(slot, name, file.path(), view, "the GGUF metadata"));
  }
  bool untied = false;
  if (const GgufTensorInfo* out = file.Find("output.weight")) {
    // An untied head; g4's head is a [V, H] view like the embedding, so it binds the same way.
    used.insert(out->name);
    TensorSlot head{"lm_head.weight", w->embed.shape, TensorRole::kRequired, &w->lm_head,
                    TensorSlot::Init::kEmbed};
    G4_ASSIGN_OR_RETURN(const TensorView view, GgufFile::View(*out, file.path()));
    G4_RETURN_IF_ERROR(BindView(head, out->name, file.path(), view, "the GGUF metadata"));
    untied = true;
  }
  int unused = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (!used.count(t.name) && unused++ < 5) {
      LogWarning(file.path() + ": tensor '" + t.name + "' is not used by g4");
    }
  }
  return untied;
}

}  // namespace

Status BindCheckpoint(const Checkpoint& ckpt, const std::vector<TensorSlot>& slots,
                      const LoadOptions& options, ModelWeights* w) {
  if (slots.empty()) return Internal("no tensor slots to bind");
  bool untied = false;
  if (ckpt.is_gguf()) {
    G4_ASSIGN_OR_RETURN(untied, BindGguf(ckpt, slots, w));
  } else {
    if (!ckpt.store()) return Internal(ckpt.path() + ": opened without its weights");
    G4_RETURN_IF_ERROR(BindSafetensors(ckpt, slots));
  }
  if (!untied) G4_RETURN_IF_ERROR(MakeLmHead(w, options));
  // A tied head that MakeLmHead copied (quantized): the copy is in memory, not in the file.
  const bool head_copied = !untied && w->lm_head.data != w->embed.data;
  if (head_copied) {
    // The mapped embedding is now only gathered (one row per token): drop the pages the
    // quantizer read from this process's resident set (they stay in the page cache).
    ReleaseMappedPages(w->embed.data, w->embed.nbytes());
  }
  PackWeights(slots, options, head_copied, w);
  return Status::Ok();
}

void PackWeights(const std::vector<TensorSlot>& slots, const LoadOptions& options,
                 bool head_copied, ModelWeights* w) {
  if (options.pack_weight == nullptr) return;
  ThreadPool pool(options.threads);
  // mapped: *v is a view of the checkpoint's read-only file mapping. A copy made at load (a
  // quantized head) keeps its pages: madvise would zero them, and a backend without these
  // panels (the ref twin in tests) reads the rows.
  const auto pack = [&](TensorView* v, bool mapped) {
    PackedWeight packed = options.pack_weight(pool, *v);
    if (!packed.panels) return;
    SetPanels(packed, v);
    w->owned.push_back(std::move(packed.panels));
    // Only the panels are read from now on by this backend (a tied head's embedding rows fault
    // back in when gathered); int4 groups' scales are in the panels too.
    if (mapped) {
      ReleaseMappedPages(v->data, v->nbytes());
      ReleaseMappedPages(v->quant.scales, v->scale_nbytes());
    }
  };
  for (const TensorSlot& s : slots) {
    // Linears, and expert stacks (each expert's slice reads its own panels, ExpertRows).
    const bool matmul = s.linear() || s.init == TensorSlot::Init::kExperts;
    if (s.role == TensorRole::kRequired && s.view != nullptr && matmul && !s.view->empty()) {
      pack(s.view, true);
    }
  }
  pack(&w->lm_head, !head_copied);
}

namespace {

// Whether the backend's load-time packer (LoadOptions::pack_weight) packs a head of this kind:
// asked of its first 16 rows, a few KB, not of the whole table.
bool HeadIsPacked(const TensorView& embed, const LoadOptions& options) {
  if (options.pack_weight == nullptr || !HasQ8Dot(embed.quant.kind) || embed.dim(0) < 16) {
    return false;
  }
  TensorView rows = embed;
  rows.shape = {16, embed.dim(1)};
  ThreadPool pool(1);
  return options.pack_weight(pool, rows).panels != nullptr;
}

// Whether the packer packs a Q6_K copy of a float head: asked of a copy of its first 16 rows.
bool Q6KCopyIsPacked(const TensorView& embed, const LoadOptions& options) {
  if (options.pack_weight == nullptr || embed.quantized() || embed.dim(0) < 16 ||
      embed.dim(1) % 256 != 0) {
    return false;
  }
  TensorView rows = embed;
  rows.shape = {16, embed.dim(1)};
  ThreadPool pool(1);
  auto q = QuantizeWeight(pool, rows, QuantKind::kQ6_K, 0, DType::kF32);
  return q.ok() && HeadIsPacked(q->view, options);
}

}  // namespace

Status MakeLmHead(ModelWeights* w, const LoadOptions& options) {
  HeadMode mode = options.head;
  if (mode == HeadMode::kAuto) {
    // With quantized linears the head is the biggest decode stream left: an int8 copy is
    // faster to stream than bf16, and than Q6_K / Q4_K blocks too (their unpacking costs more
    // than the bytes they save; docs/speed.md). Q8_0 blocks are already int8, kept as stored.
    // A device keeps the stored head (load_options.h).
    // With int8 activations a block kind the backend packs is kept too. A float head becomes
    // Q6_K blocks where they are packed (the head llama.cpp's Q4 files carry, 0.77x Q8_0's
    // bytes; on the real Gemma 3 270M's table it costs +0.29% perplexity, the exact path's
    // int8 rows +0.22%: scripts/head_quant_accuracy.py, docs/speed.md), else Q8_0 blocks,
    // which the integer kernels stream at full speed.
    const bool stored_is_int8 = w->embed.quantized() &&
                                (w->embed.quant.kind == QuantKind::kQ8_0 ||
                                 (options.int8_matvec && HeadIsPacked(w->embed, options)));
    if (options.device || !AnyQuantizedLinear(*w) || stored_is_int8) {
      mode = HeadMode::kAsStored;
    } else {
      mode = !options.int8_matvec                    ? HeadMode::kQ8
             : Q6KCopyIsPacked(w->embed, options) ? HeadMode::kQ6_K
                                                  : HeadMode::kQ8_0;
    }
  }
  // Tied (spec §2.9): a lm_head.weight in the file is a duplicate of the embedding.
  w->lm_head = w->embed;
  if (mode == HeadMode::kAsStored) return Status::Ok();
  ThreadPool pool(options.threads);
  const bool q8 = mode == HeadMode::kQ8;
  const QuantKind kind = mode == HeadMode::kQ8_0   ? QuantKind::kQ8_0
                         : mode == HeadMode::kQ6_K ? QuantKind::kQ6_K
                         : q8                      ? QuantKind::kInt8Group
                                                   : QuantKind::kInt4Group;
  auto q = QuantizeWeight(pool, w->embed, kind, q8 ? w->embed.dim(1) : 32,
                          q8 ? DType::kF32 : DType::kBF16);
  if (!q.ok()) return q.status().WithContext("quantizing the LM head");
  w->lm_head = q->view;
  w->owned.push_back(q->storage);
  return Status::Ok();
}

Status BindView(const TensorSlot& slot, const std::string& name, const std::string& file,
                const TensorView& t, const char* shape_source) {
  if (t.quantized()) {
    // GGUF block weights: linears, expert stacks and the embedding tables (gathered row by
    // row).
    const bool may_quantize = slot.linear() || slot.init == TensorSlot::Init::kExperts ||
                              slot.init == TensorSlot::Init::kEmbed ||
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

std::vector<WeightEntry> WeightEntries(const std::vector<TensorSlot>& slots) {
  std::vector<WeightEntry> out;
  for (const TensorSlot& s : slots) {
    if (s.role != TensorRole::kRequired || !s.view || s.view->empty()) continue;
    out.push_back(WeightEntry{s.name, s.view, s.table(), s.linear(), s.experts_read});
  }
  return out;
}

namespace {

// t * factor + offset as an owned f32 copy.
StatusOr<TensorView> AffineCopy(const TensorView& t, float factor, float offset,
                                ModelWeights* w) {
  if (t.quantized() || !IsFloat(t.dtype)) {
    return InvalidArgument("a norm weight must be a float tensor, not " + StorageName(t));
  }
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    (*values)[static_cast<size_t>(i)] = LoadAsF32(t.data, t.dtype, i) * factor + offset;
  }
  TensorView out(values->data(), DType::kF32, t.shape);
  w->owned.push_back(values);
  return out;
}

}  // namespace

StatusOr<TensorView> OffsetCopy(const TensorView& t, float offset, ModelWeights* w) {
  return AffineCopy(t, 1.0f, offset, w);
}

StatusOr<TensorView> ScaledCopy(const TensorView& t, float factor, ModelWeights* w) {
  return AffineCopy(t, factor, 0.0f, w);
}

}  // namespace g4
