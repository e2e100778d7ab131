#include "synthetic/gemma4.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "loader/compressed_tensors.h"
#include "loader/safetensors_writer.h"
#include "model/decoder/weights.h"
#include "model/gemma4/config.h"
#include "model/gemma4/tensors.h"
#include "ops/quantize.h"
#include "synthetic/gemma4_internal.h"

namespace g4 {
namespace {

using nlohmann::ordered_json;

struct Preset {
  int vocab, hidden, layers, period;  // layer i is full iff (i + 1) % period == 0
  int heads, kv_heads, global_kv_heads, head_dim, global_head_dim, window, intermediate;
  bool double_wide, k_eq_v;
  int kv_shared, ple_dim;
  int experts = 0, top_k = 0, moe_width = 0;  // MoE layers (26B-A4B): 0 experts = dense
};

// E2B and E4B are the released shapes exactly (spec §1.2); tiny is the golden TINY config
// with the E2B pattern; 31b-like has the 31B features (k_eq_v global layers with their own KV
// head count, no PLE, no KV sharing, 5:1) at a size that runs anywhere. 26b-a4b is the released
// 26B-A4B (spec §1.2: 128 experts of 704, top-8, beside a dense MLP of 2112); 26b-a4b-like its
// features at a size that runs anywhere (16 experts of 32, top-4).
StatusOr<Preset> GetPreset(const std::string& name) {
  if (name == "tiny") return Preset{512, 64, 10, 5, 4, 1, 0, 16, 32, 8, 96, true, false, 4, 8};
  if (name == "e2b") {
    return Preset{262144, 1536, 35, 5, 8, 1, 0, 256, 512, 512, 6144, true, false, 20, 256};
  }
  if (name == "e4b") {
    return Preset{262144, 2560, 42, 6, 8, 2, 0, 256, 512, 512, 10240, false, false, 18, 256};
  }
  if (name == "31b-like") return Preset{1024, 256, 12, 6, 8, 4, 2, 32, 64, 16, 512, false, true, 0, 0};
  if (name == "26b-a4b") {
    return Preset{262144, 2816, 30, 6, 16, 8, 2, 256, 512, 1024, 2112, false, true, 0, 0,
                  128, 8, 704};
  }
  if (name == "26b-a4b-like") {
    return Preset{1024, 256, 12, 6, 8, 4, 2, 32, 64, 16, 128, false, true, 0, 0, 16, 4, 32};
  }
  return InvalidArgument("unknown preset '" + name +
                         "' (expected tiny, e2b, e4b, 31b-like, 26b-a4b, 26b-a4b-like)");
}

// Counter-based generator: element i of a tensor is a pure function of (seed, name, i), so the
// values do not depend on thread count, chunking or the order tensors are written in.
uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall), rescaled.
// Cheap enough to fill the 9 GB E2B checkpoint in under a minute per core.
float Normal(uint64_t bits) {
  double s = 0;
  for (int k = 0; k < 4; ++k) s += static_cast<double>((bits >> (16 * k)) & 0xffff) / 65536.0;
  return static_cast<float>((s - 2.0) * std::sqrt(3.0));
}
float Uniform01(uint64_t bits) { return static_cast<float>((bits >> 40) * (1.0 / 16777216.0)); }

float InitValue(const TensorSlot& slot, int hidden, uint64_t bits) {
  using Init = TensorSlot::Init;
  switch (slot.init) {
    case Init::kLinear: return Normal(bits) / std::sqrt(static_cast<float>(slot.shape[1]));
    case Init::kExperts: return Normal(bits) / std::sqrt(static_cast<float>(slot.shape[2]));
    case Init::kPleGate: return 0.25f * Normal(bits) / std::sqrt(static_cast<float>(hidden));
    case Init::kEmbed: return 2.0f * Normal(bits) / std::sqrt(static_cast<float>(hidden));
    case Init::kPleEmbed: return Normal(bits);
    case Init::kNorm: return 1.0f + 0.1f * Normal(bits);
    case Init::kQkNorm: {
      // Raw attention scores (scale 1.0) get a std of about 1.5: sharp enough to matter,
      // not so sharp that the random network turns chaotic.
      const float c = std::sqrt(1.5f / std::sqrt(static_cast<float>(slot.shape[0])));
      return c * (1.0f + 0.1f * Normal(bits));
    }
    case Init::kLayerScalar: return 0.5f + 0.5f * Uniform01(bits);
  }
  return 0.0f;
}

void Encode(float v, DType dtype, uint8_t* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, &v, 4);
  } else {
    const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(v) : F32ToF16(v);
    std::memcpy(out, &b, 2);
  }
}

ordered_json TextConfig(const Preset& p) {
  ordered_json lt = ordered_json::array();
  for (int i = 0; i < p.layers; ++i) {
    const bool full = (i + 1) % p.period == 0 || i == p.layers - 1;
    lt.push_back(full ? "full_attention" : "sliding_attention");
  }
  ordered_json t;
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["attention_k_eq_v"] = p.k_eq_v;
  t["bos_token_id"] = 2;
  t["enable_moe_block"] = p.experts > 0;
  t["eos_token_id"] = 1;
  t["final_logit_softcapping"] = 30.0;
  t["global_head_dim"] = p.global_head_dim;
  t["head_dim"] = p.head_dim;
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["hidden_size"] = p.hidden;
  t["hidden_size_per_layer_input"] = p.ple_dim;
  t["intermediate_size"] = p.intermediate;
  t["layer_types"] = lt;
  t["max_position_embeddings"] = 131072;
  if (p.experts > 0) t["moe_intermediate_size"] = p.moe_width;
  t["model_type"] = "gemma4_text";
  t["num_attention_heads"] = p.heads;
  if (p.experts > 0) t["num_experts"] = p.experts;
  t["num_global_key_value_heads"] = p.k_eq_v ? ordered_json(p.global_kv_heads) : ordered_json();
  t["num_hidden_layers"] = p.layers;
  t["num_key_value_heads"] = p.kv_heads;
  t["num_kv_shared_layers"] = p.kv_shared;
  t["pad_token_id"] = 0;
  t["rms_norm_eps"] = 1e-6;
  t["rope_parameters"] = {
      {"full_attention",
       {{"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}, {"rope_type", "proportional"}}},
      {"sliding_attention", {{"rope_theta", 10000.0}, {"rope_type", "default"}}}};
  t["sliding_window"] = p.window;
  t["tie_word_embeddings"] = true;
  if (p.experts > 0) t["top_k_experts"] = p.top_k;
  t["use_bidirectional_attention"] = nullptr;
  t["use_double_wide_mlp"] = p.double_wide;
  t["vocab_size"] = p.vocab;
  t["vocab_size_per_layer_input"] = p.ple_dim > 0 ? p.vocab : 0;
  return t;
}

ordered_json IdsBelow(std::initializer_list<int> ids, int vocab) {
  ordered_json a = ordered_json::array();
  for (int id : ids) if (id < vocab) a.push_back(id);
  return a;
}

Status WriteJson(const std::filesystem::path& path, const ordered_json& j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) return IoError("cannot write " + path.string());
  return Status::Ok();
}

// Whether `slot` is written pack-quantized under options `o`: a linear or an MoE expert stack
// whose input width the group divides, except the MoE router, which the released exports keep
// in bf16 (the linears left in float are named in the ignore list).
bool Quantized(const SyntheticOptions& o, const TensorSlot& slot) {
  const bool stack = slot.init == TensorSlot::Init::kExperts && slot.shape.size() == 3;
  const bool linear = slot.linear() && slot.shape.size() == 2 &&
                      !slot.name.ends_with("router.proj.weight");
  return o.quant == "w4a16" && (linear || stack) && slot.shape.back() % o.quant_group == 0;
}

// The ignore list of the released exports (embeddings, head, vision/audio towers), plus any
// linear of this shape the group size does not divide.
std::vector<std::string> IgnoreList(const SyntheticOptions& o, const ModelConfig& config) {
  const std::string prefix = o.text_only_layout ? "model." : "model.language_model.";
  std::vector<std::string> ignore = {"lm_head", prefix + "embed_tokens",
                                     prefix + "embed_tokens_per_layer", "re:.*vision_tower.*",
                                     "re:.*audio_tower.*", "re:.*embed_vision.*",
                                     "re:.*embed_audio.*"};
  for (const TensorSlot& slot : ListTensors(config, nullptr)) {
    if (slot.linear() && !Quantized(o, slot)) ignore.push_back(prefix + slot.module());
  }
  return ignore;
}

}  // namespace

namespace synthetic_internal {

uint64_t TensorKey(uint64_t seed, const std::string& slot_name) {
  return SplitMix64(seed ^ HashName(slot_name));
}

float TensorValue(const TensorSlot& slot, int hidden, uint64_t key, int64_t i) {
  return InitValue(slot, hidden, SplitMix64(key + static_cast<uint64_t>(i)));
}

TensorFill CountBytes(TensorFill fill, std::function<void(uint64_t)> on_bytes) {
  if (!on_bytes) return fill;
  // Forwards each write and reports the running total.
  class Counter : public ByteSink {
   public:
    Counter(ByteSink& inner, uint64_t* total, const std::function<void(uint64_t)>& report)
        : inner_(inner), total_(total), report_(report) {}
    Status Write(const void* p, size_t n) override {
      G4_RETURN_IF_ERROR(inner_.Write(p, n));
      *total_ += n;
      report_(*total_);
      return Status::Ok();
    }

   private:
    ByteSink& inner_;
    uint64_t* total_;
    const std::function<void(uint64_t)>& report_;
  };
  auto total = std::make_shared<uint64_t>(0);
  return [fill = std::move(fill), on_bytes = std::move(on_bytes), total](size_t index,
                                                                         ByteSink& sink) {
    Counter counter(sink, total.get(), on_bytes);
    return fill(index, counter);
  };
}

}  // namespace synthetic_internal

StatusOr<ordered_json> SyntheticConfig(const SyntheticOptions& o) {
  G4_ASSIGN_OR_RETURN(Preset p, GetPreset(o.preset));
  if (o.layers) {
    // Keep the preset's share of KV-shared layers, but leave at least one full period of
    // non-shared layers so both donors exist.
    const int shared = static_cast<int>(std::lround(double(p.kv_shared) * *o.layers / p.layers));
    p.layers = *o.layers;
    p.kv_shared = std::max(0, std::min(shared, p.layers - p.period));
  }
  if (o.hidden) p.hidden = *o.hidden;
  if (o.vocab) p.vocab = *o.vocab;
  if (o.heads) p.heads = *o.heads;
  if (o.kv_heads) p.kv_heads = *o.kv_heads;
  if (o.intermediate) p.intermediate = *o.intermediate;
  if (o.window) p.window = *o.window;
  if (o.kv_shared_layers) p.kv_shared = *o.kv_shared_layers;
  if (o.ple_dim) p.ple_dim = *o.ple_dim;
  if (o.head_dim) p.head_dim = *o.head_dim;
  if (o.global_head_dim) p.global_head_dim = *o.global_head_dim;
  if (p.layers <= 0 || p.hidden <= 0 || p.vocab < 8) {
    return InvalidArgument("make-model: layers and hidden must be > 0 and vocab >= 8");
  }
  ordered_json text = TextConfig(p);
  ordered_json config;
  if (o.text_only_layout) {
    config = text;
    config["architectures"] = {"Gemma4ForCausalLM"};
  } else {
    config["architectures"] = {"Gemma4ForConditionalGeneration"};
    config["audio_config"] = nullptr;
    config["eos_token_id"] = IdsBelow({1, 106}, p.vocab);
    config["model_type"] = "gemma4";
    config["text_config"] = text;
    config["tie_word_embeddings"] = true;
    config["vision_config"] = nullptr;
  }
  config["dtype"] = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kBF16 ? "bfloat16" : "float16";
  // Validate through the same parser the loader uses.
  G4_ASSIGN_OR_RETURN(const ModelConfig parsed,
                      ParseGemma4Config(nlohmann::json::parse(config.dump()), nullptr,
                                       "make-model config"));
  if (!o.quant.empty()) {
    if (o.quant != "w4a16") {
      return InvalidArgument("make-model: --quant must be w4a16 (got '" + o.quant + "')");
    }
    if (o.quant_group <= 0 || o.quant_group % 2 != 0) {
      return InvalidArgument("make-model: the W4A16 group size must be even and > 0");
    }
    config["quantization_config"] = MakeW4A16QuantizationConfig(o.quant_group, IgnoreList(o, parsed));
  }
  return config;
}

Status WriteSyntheticCheckpoint(const SyntheticOptions& o, const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (!IsFloat(o.dtype)) return InvalidArgument("make-model: --dtype must be f32, bf16 or f16");
  G4_ASSIGN_OR_RETURN(ordered_json config_json, SyntheticConfig(o));
  G4_ASSIGN_OR_RETURN(ModelConfig config,
                      ParseGemma4Config(nlohmann::json::parse(config_json.dump()), nullptr));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return IoError("cannot create " + out_dir + ": " + ec.message());
  G4_RETURN_IF_ERROR(WriteJson(fs::path(out_dir) / "config.json", config_json));
  ordered_json gen;
  gen["bos_token_id"] = 2;
  gen["eos_token_id"] = IdsBelow({1, 106, 50}, config.vocab_size);
  gen["pad_token_id"] = 0;
  gen["temperature"] = 1.0;
  gen["top_k"] = 64;
  gen["top_p"] = 0.95;
  G4_RETURN_IF_ERROR(WriteJson(fs::path(out_dir) / "generation_config.json", gen));

  const std::string prefix = o.text_only_layout ? "model." : "model.language_model.";
  const std::vector<TensorSlot> slots = ListTensors(config, nullptr);
  // One spec per file tensor: a float slot is one tensor; a quantized linear is three
  // (weight_packed, weight_scale, weight_shape), each refilled from the same float values.
  enum class Part { kFloat, kPacked, kScale, kShape };
  struct Source {
    size_t slot;
    Part part;
  };
  std::vector<TensorSpec> specs;
  std::vector<Source> sources;
  for (size_t i = 0; i < slots.size(); ++i) {
    const TensorSlot& s = slots[i];
    if (!Quantized(o, s)) {
      specs.push_back({prefix + s.name, o.dtype, s.shape});
      sources.push_back({i, Part::kFloat});
      continue;
    }
    // A linear's MODULE.weight_packed, ...; an expert stack's NAME_packed, ... (the 26B export).
    const int64_t K = s.shape.back();
    const bool stack = s.init == TensorSlot::Init::kExperts;
    const std::string m = prefix + (stack ? s.name : s.module());
    std::vector<int64_t> packed = s.shape, scales = s.shape;
    packed.back() = QuantRowBytes(QuantKind::kInt4Group, K) / 4;
    scales.back() = K / o.quant_group;
    specs.push_back({m + (stack ? "_packed" : kWeightPackedSuffix), DType::kI32, packed});
    sources.push_back({i, Part::kPacked});
    specs.push_back({m + (stack ? "_scale" : kWeightScaleSuffix), DType::kBF16, scales});
    sources.push_back({i, Part::kScale});
    specs.push_back({m + (stack ? "_shape" : kWeightShapeSuffix), DType::kI64,
                     {static_cast<int64_t>(s.shape.size())}});
    sources.push_back({i, Part::kShape});
  }

  ThreadPool pool(0);
  const size_t esize = DTypeSize(o.dtype);
  std::vector<uint8_t> buf;
  constexpr int64_t kChunk = int64_t{1} << 22;
  // Element i of slot's tensor: a pure function of (seed, name, i), so a quantized checkpoint
  // holds the quantized values of exactly the float checkpoint's weights.
  auto value = [&](const TensorSlot& slot, uint64_t key, int64_t i) {
    return InitValue(slot, config.hidden_size, SplitMix64(key + static_cast<uint64_t>(i)));
  };
  auto fill_float = [&](const TensorSlot& slot, uint64_t key, ByteSink& sink) -> Status {
    int64_t n = 1;
    for (int64_t d : slot.shape) n *= d;
    for (int64_t start = 0; start < n; start += kChunk) {
      const int64_t len = std::min(kChunk, n - start);
      buf.resize(static_cast<size_t>(len) * esize);
      pool.ParallelFor(len, 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) Encode(value(slot, key, start + i), o.dtype, buf.data() + i * esize);
      });
      G4_RETURN_IF_ERROR(sink.Write(buf.data(), buf.size()));
    }
    return Status::Ok();
  };
  // The packed rows or the bf16 scales of a quantized linear, a block of rows at a time.
  auto fill_quant = [&](const TensorSlot& slot, uint64_t key, bool packed, ByteSink& sink) -> Status {
    const int64_t K = slot.shape.back(), G = o.quant_group;
    int64_t N = 1;  // rows: every dimension but the last
    for (size_t d = 0; d + 1 < slot.shape.size(); ++d) N *= slot.shape[d];
    const int64_t row_bytes = QuantRowBytes(QuantKind::kInt4Group, K);
    const int64_t scale_bytes = K / G * 2;
    const int64_t out_bytes = packed ? row_bytes : scale_bytes;
    const int64_t rows_per_chunk = std::max<int64_t>(1, kChunk / K);
    for (int64_t r0 = 0; r0 < N; r0 += rows_per_chunk) {
      const int64_t rows = std::min(rows_per_chunk, N - r0);
      buf.resize(static_cast<size_t>(rows * out_bytes));
      pool.ParallelFor(rows, 16, [&](int64_t b, int64_t e) {
        std::vector<float> w(static_cast<size_t>(K));
        std::vector<uint8_t> row(static_cast<size_t>(row_bytes)), scales(static_cast<size_t>(scale_bytes));
        for (int64_t r = b; r < e; ++r) {
          for (int64_t k = 0; k < K; ++k) w[static_cast<size_t>(k)] = value(slot, key, (r0 + r) * K + k);
          QuantizeRow(w.data(), K, QuantKind::kInt4Group, G, DType::kBF16, row.data(), scales.data());
          std::memcpy(buf.data() + r * out_bytes, packed ? row.data() : scales.data(),
                      static_cast<size_t>(out_bytes));
        }
      });
      G4_RETURN_IF_ERROR(sink.Write(buf.data(), buf.size()));
    }
    return Status::Ok();
  };
  auto fill = [&](size_t index, ByteSink& sink) -> Status {
    const TensorSlot& slot = slots[sources[index].slot];
    const uint64_t key = SplitMix64(o.seed ^ HashName(slot.name));
    switch (sources[index].part) {
      case Part::kFloat: return fill_float(slot, key, sink);
      case Part::kPacked: return fill_quant(slot, key, true, sink);
      case Part::kScale: return fill_quant(slot, key, false, sink);
      case Part::kShape: return sink.Write(slot.shape.data(), slot.shape.size() * 8);
    }
    return Internal("make-model: unknown tensor part");
  };
  return WriteShardedSafetensors(out_dir, specs, o.max_shard_bytes,
                                 synthetic_internal::CountBytes(fill, o.on_bytes));
}

}  // namespace g4
