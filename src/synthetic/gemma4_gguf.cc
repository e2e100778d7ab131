// Synthetic checkpoints as one GGUF file: the safetensors writer's config and values, under
// llama.cpp's gemma4 tensor names and metadata keys, quantized row by row while streaming.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/thread_pool.h"
#include "loader/gguf_writer.h"
#include "model/decoder/gguf_names.h"
#include "model/gemma4/config.h"
#include "model/gemma4/tensors.h"
#include "ops/quantize_gguf.h"
#include "synthetic/gemma4.h"
#include "synthetic/gemma4_internal.h"

namespace g4 {
namespace {

using gguf::GgmlType;

// How one file tensor is stored.
struct Storage {
  DType dtype = DType::kF32;        // plain types
  QuantKind quant = QuantKind::kNone;  // block types
};

uint32_t GgmlId(const Storage& s) {
  return static_cast<uint32_t>(gguf::GgmlTypeFor(s.dtype, s.quant));
}

// The first of `kinds` whose block divides the row length K (and that can be written), else F32.
Storage FirstFitting(std::initializer_list<QuantKind> kinds, int64_t K) {
  for (QuantKind q : kinds) {
    if (CanQuantizeGguf(q) && K % GgufBlockFormat(q).elems == 0) return {DType::kU8, q};
  }
  return {DType::kF32, QuantKind::kNone};
}

StatusOr<Storage> StorageFor(const TensorSlot& slot, const std::string& quant, DType dtype) {
  // Norms, layer scalars and the MoE router (llama.cpp keeps ffn_gate_inp F32): F32.
  if (slot.shape.size() < 2 || slot.name.ends_with("router.proj.weight")) return Storage{};
  const int64_t K = slot.shape.back();
  const bool embed = slot.init == TensorSlot::Init::kEmbed ||
                     slot.init == TensorSlot::Init::kPleEmbed;
  if (quant.empty()) return Storage{dtype, QuantKind::kNone};
  if (quant == "f32") return Storage{DType::kF32, QuantKind::kNone};
  if (quant == "f16") return Storage{DType::kF16, QuantKind::kNone};
  if (quant == "bf16") return Storage{DType::kBF16, QuantKind::kNone};
  if (quant == "q8_0") return FirstFitting({QuantKind::kQ8_0}, K);
  if (quant == "q4_0") {
    if (embed) return FirstFitting({QuantKind::kQ6_K, QuantKind::kQ8_0}, K);
    return FirstFitting({QuantKind::kQ4_0, QuantKind::kQ8_0}, K);
  }
  return InvalidArgument("make-model: GGUF --quant must be f32, f16, bf16, q8_0 or q4_0 (got '" +
                         quant + "')");
}

// llama.cpp's LLAMA_FTYPE of the file's main matrix type.
uint32_t FileType(const std::string& quant, DType dtype) {
  if (quant == "q8_0") return 7;
  if (quant == "q4_0") return 2;
  const DType d = quant == "f32" ? DType::kF32 : quant == "f16" ? DType::kF16
                : quant == "bf16" ? DType::kBF16 : dtype;
  return d == DType::kF32 ? 0 : d == DType::kF16 ? 1 : 32;
}

// Gemma 4's special ids where the vocabulary has room (peers.md §3.4), byte pieces at 108..363,
// "▁" and printable ASCII after them, "<unusedN>" filler elsewhere.
void AddSyntheticVocab(int64_t V, GgufMetadata* md) {
  std::vector<std::string> tokens(static_cast<size_t>(V));
  std::vector<int32_t> types(static_cast<size_t>(V), 5);
  for (int64_t id = 0; id < V; ++id) tokens[id] = "<unused" + std::to_string(id) + ">";
  auto put = [&](int64_t id, std::string piece, int32_t type) {
    if (id < V) {
      tokens[id] = std::move(piece);
      types[id] = type;
    }
  };
  const std::pair<int, const char*> control[] = {
      {0, "<pad>"}, {1, "<eos>"}, {2, "<bos>"}, {3, "<unk>"}, {4, "<mask>"},
      {46, "<|tool>"}, {47, "<tool|>"}, {48, "<|tool_call>"}, {49, "<tool_call|>"},
      {50, "<|tool_response>"}, {51, "<tool_response|>"}, {52, "<|\"|>"}, {98, "<|think|>"},
      {100, "<|channel>"}, {101, "<channel|>"}, {105, "<|turn>"}, {106, "<turn|>"}};
  for (const auto& [id, piece] : control) put(id, piece, 3);
  put(107, "\n", 1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    put(108 + b, name, 6);
  }
  put(364, "\xE2\x96\x81", 1);
  for (int c = 0x21; c < 0x7F; ++c) put(365 + (c - 0x21), std::string(1, static_cast<char>(c)), 1);
  std::vector<float> scores(static_cast<size_t>(V), 0.0f);
  for (int64_t id = 0; id < V; ++id) {
    if (types[id] == 3) scores[id] = -1000.0f;
  }
  md->SetString("tokenizer.ggml.model", "gemma4");
  md->SetStringArray("tokenizer.ggml.tokens", tokens);
  md->SetF32Array("tokenizer.ggml.scores", scores);
  md->SetI32Array("tokenizer.ggml.token_type", types);
  md->SetStringArray("tokenizer.ggml.merges", std::span<const std::string>());
  const std::pair<const char*, int64_t> ids[] = {
      {"tokenizer.ggml.bos_token_id", 2}, {"tokenizer.ggml.eos_token_id", 1},
      {"tokenizer.ggml.unknown_token_id", 3}, {"tokenizer.ggml.padding_token_id", 0},
      {"tokenizer.ggml.mask_token_id", 4}};
  for (const auto& [key, id] : ids) {
    if (id < V) md->SetU32(key, static_cast<uint32_t>(id));
  }
  md->SetBool("tokenizer.ggml.add_bos_token", true);
  md->SetBool("tokenizer.ggml.add_space_prefix", false);
}

void AddModelMetadata(const ModelConfig& c, const SyntheticOptions& o, uint32_t file_type,
                      GgufMetadata* md) {
  md->SetString("general.architecture", "gemma4");
  md->SetString("general.name", "gemma4-" + o.preset + "-synthetic-seed" + std::to_string(o.seed));
  md->SetU32("general.file_type", file_type);
  md->SetU32("general.quantization_version", 2);
  md->SetU32("gemma4.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  md->SetU32("gemma4.embedding_length", static_cast<uint32_t>(c.hidden_size));
  md->SetU32("gemma4.block_count", static_cast<uint32_t>(c.num_layers));
  std::vector<int32_t> ff, kv;
  std::vector<bool> sliding;
  for (const LayerConfig& l : c.layers) {
    ff.push_back(l.mlp_width);
    kv.push_back(l.n_kv_heads);
    sliding.push_back(l.sliding());
  }
  md->SetI32Array("gemma4.feed_forward_length", ff);
  md->SetU32("gemma4.attention.head_count", static_cast<uint32_t>(c.num_heads));
  md->SetI32Array("gemma4.attention.head_count_kv", kv);
  const int global_hd = c.global_head_dim > 0 ? c.global_head_dim : c.head_dim;
  md->SetU32("gemma4.attention.key_length", static_cast<uint32_t>(global_hd));
  md->SetU32("gemma4.attention.value_length", static_cast<uint32_t>(global_hd));
  md->SetU32("gemma4.attention.key_length_swa", static_cast<uint32_t>(c.head_dim));
  md->SetU32("gemma4.attention.value_length_swa", static_cast<uint32_t>(c.head_dim));
  md->SetU32("gemma4.rope.dimension_count", static_cast<uint32_t>(global_hd));
  md->SetU32("gemma4.rope.dimension_count_swa", static_cast<uint32_t>(c.head_dim));
  md->SetF32("gemma4.rope.freq_base", static_cast<float>(c.rope_full.theta));
  md->SetF32("gemma4.rope.freq_base_swa", static_cast<float>(c.rope_sliding.theta));
  md->SetU32("gemma4.attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  md->SetBoolArray("gemma4.attention.sliding_window_pattern", sliding);
  md->SetU32("gemma4.attention.shared_kv_layers", static_cast<uint32_t>(c.num_kv_shared_layers));
  md->SetU32("gemma4.embedding_length_per_layer_input", static_cast<uint32_t>(c.ple_width));
  md->SetF32("gemma4.attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  md->SetF32("gemma4.final_logit_softcapping", static_cast<float>(c.final_logit_softcap));
  if (c.moe()) {
    md->SetU32("gemma4.expert_count", static_cast<uint32_t>(c.num_experts));
    md->SetU32("gemma4.expert_used_count", static_cast<uint32_t>(c.top_k_experts));
    md->SetU32("gemma4.expert_feed_forward_length",
               static_cast<uint32_t>(c.moe_intermediate_size));
  }
}

// rope_freqs for the full layers: llama.cpp's per-pair divisors; pairs past the rotated share
// get 1e30 (no rotation), the rotated ones the proportional RoPE factor.
std::vector<float> RopeFreqs(const ModelConfig& c) {
  const int hd = c.global_head_dim > 0 ? c.global_head_dim : c.head_dim;
  const int half = hd / 2;
  const int rotated = c.rope_full.kind == RopeConfig::Kind::kProportional
                          ? static_cast<int>(c.rope_full.partial_rotary_factor * hd / 2)
                          : half;
  std::vector<float> v(static_cast<size_t>(half), 1e30f);
  for (int j = 0; j < std::min(rotated, half); ++j) v[j] = static_cast<float>(c.rope_full.factor);
  return v;
}

}  // namespace

Status WriteSyntheticGguf(const SyntheticOptions& o, const std::string& gguf_quant,
                          const GgufTokenizerWriter& tokenizer, const std::string& path) {
  if (!o.quant.empty()) {
    return InvalidArgument("make-model: --quant " + o.quant + " is a safetensors format");
  }
  if (!IsFloat(o.dtype)) return InvalidArgument("make-model: --dtype must be f32, bf16 or f16");
  G4_ASSIGN_OR_RETURN(nlohmann::ordered_json config_json, SyntheticConfig(o));
  G4_ASSIGN_OR_RETURN(ModelConfig config,
                      ParseGemma4Config(nlohmann::json::parse(config_json.dump()), nullptr));
  GgufMetadata md;
  AddModelMetadata(config, o, FileType(gguf_quant, o.dtype), &md);
  if (tokenizer) {
    G4_RETURN_IF_ERROR(tokenizer(&md));
  } else {
    AddSyntheticVocab(config.vocab_size, &md);
  }

  const std::vector<TensorSlot> slots = ListTensors(config, nullptr);
  std::vector<GgufTensorSpec> specs;
  std::vector<Storage> storage;
  for (const TensorSlot& s : slots) {
    const std::string name = GgufTensorName(s.name);
    if (name.empty()) return Internal("make-model: no GGUF name for tensor slot " + s.name);
    G4_ASSIGN_OR_RETURN(const Storage st, StorageFor(s, gguf_quant, o.dtype));
    specs.push_back({name, s.shape, GgmlId(st)});
    storage.push_back(st);
  }
  const std::vector<float> rope_freqs = RopeFreqs(config);
  if (config.rope_full.kind == RopeConfig::Kind::kProportional) {
    specs.push_back({"rope_freqs.weight", {static_cast<int64_t>(rope_freqs.size())},
                     static_cast<uint32_t>(GgmlType::kF32)});
    storage.push_back({});
  }

  ThreadPool pool(0);
  constexpr int64_t kChunkElems = int64_t{1} << 22;
  std::vector<uint8_t> buf;
  auto fill = [&](size_t index, ByteSink& sink) -> Status {
    if (index >= slots.size()) return sink.Write(rope_freqs.data(), rope_freqs.size() * 4);
    const TensorSlot& slot = slots[index];
    const Storage st = storage[index];
    const uint64_t key = synthetic_internal::TensorKey(o.seed, slot.name);
    int64_t n = 1;
    for (int64_t d : slot.shape) n *= d;
    const int64_t K = slot.shape.back(), rows = n / K;
    const BlockFormat bf = GgufBlockFormat(st.quant);
    const int64_t row_bytes = st.quant == QuantKind::kNone
                                  ? K * static_cast<int64_t>(DTypeSize(st.dtype))
                                  : K / bf.elems * bf.bytes;
    const int64_t rows_per_chunk = std::max<int64_t>(1, kChunkElems / K);
    Status error;
    std::mutex error_mu;
    for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
      const int64_t nr = std::min(rows_per_chunk, rows - r0);
      buf.resize(static_cast<size_t>(nr * row_bytes));
      pool.ParallelFor(nr, 4, [&](int64_t b, int64_t e) {
        std::vector<float> w(static_cast<size_t>(K));
        for (int64_t r = b; r < e; ++r) {
          for (int64_t k = 0; k < K; ++k) {
            w[k] = synthetic_internal::TensorValue(slot, config.hidden_size, key, (r0 + r) * K + k);
          }
          uint8_t* out = buf.data() + r * row_bytes;
          if (st.quant != QuantKind::kNone) {
            const Status s = QuantizeGgufRow(st.quant, w.data(), K, out);
            if (!s.ok()) {
              std::lock_guard<std::mutex> lock(error_mu);
              error = s;
            }
          } else if (st.dtype == DType::kF32) {
            std::memcpy(out, w.data(), static_cast<size_t>(K) * 4);
          } else {
            for (int64_t k = 0; k < K; ++k) {
              const uint16_t h = st.dtype == DType::kBF16 ? F32ToBf16(w[k]) : F32ToF16(w[k]);
              std::memcpy(out + 2 * k, &h, 2);
            }
          }
        }
      });
      G4_RETURN_IF_ERROR(error);
      G4_RETURN_IF_ERROR(sink.Write(buf.data(), buf.size()));
    }
    return Status::Ok();
  };
  return WriteGguf(path, md, specs, synthetic_internal::CountBytes(fill, o.on_bytes));
}

}  // namespace g4
