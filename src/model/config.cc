#include "model/config.h"

#include <cmath>

#include "ops/moe.h"

namespace g4 {

const char* LayerTypeName(LayerType t) {
  return t == LayerType::kSliding ? "sliding_attention" : "full_attention";
}

int KvDonor(const std::vector<LayerType>& types, int num_kv_shared_layers, int i) {
  const int n = static_cast<int>(types.size());
  const int first_shared = n - num_kv_shared_layers;
  if (num_kv_shared_layers <= 0 || first_shared <= 0 || i < first_shared) return i;
  for (int j = first_shared - 1; j >= 0; --j) {
    if (types[static_cast<size_t>(j)] == types[static_cast<size_t>(i)]) return j;
  }
  return -1;
}

std::vector<float> ModelConfig::InvFreq(const LayerConfig& l) const {
  const RopeConfig& r = rope(l);
  const int half = l.head_dim / 2;
  const int rotated = r.kind == RopeConfig::Kind::kProportional
                          ? static_cast<int>(r.partial_rotary_factor * l.head_dim / 2)
                          : half;
  std::vector<float> inv(static_cast<size_t>(half), 0.0f);
  for (int j = 0; j < rotated && j < half; ++j) {
    inv[static_cast<size_t>(j)] =
        static_cast<float>(std::pow(r.theta, -2.0 * j / l.head_dim) / r.factor);
  }
  return inv;
}

Status ValidateLayers(const ModelConfig& c, const std::string& where) {
  for (const LayerConfig& l : c.layers) {
    const std::string at = where + "layer " + std::to_string(l.index) + ": ";
    if (l.kv_source < 0) {
      return InvalidArgument(at + "KV-shared, but no earlier non-shared " + LayerTypeName(l.type) +
                             " layer exists to donate K/V");
    }
    if (l.head_dim <= 0 || l.head_dim % 2) {
      return InvalidArgument(at + "head dim " + std::to_string(l.head_dim) +
                             " must be even and > 0");
    }
    if (l.n_heads <= 0 || l.n_kv_heads <= 0 || l.n_heads % l.n_kv_heads || l.mlp_width <= 0) {
      return InvalidArgument(at + std::to_string(l.n_heads) +
                             " query heads are not a multiple of " + std::to_string(l.n_kv_heads) +
                             " KV heads, or the MLP width is 0");
    }
  }
  for (const LayerConfig& l : c.layers) {
    const LayerConfig& d = c.layers[static_cast<size_t>(l.kv_source)];
    if (d.head_dim != l.head_dim || d.n_kv_heads != l.n_kv_heads) {
      return InvalidArgument(where + "layer " + std::to_string(l.index) +
                             " shares K/V with layer " + std::to_string(d.index) +
                             " but their head dims or KV head counts differ");
    }
  }
  return Status::Ok();
}

Status ValidateMoe(const ModelConfig& c, const std::string& where, const MoeFieldNames& names) {
  if (c.num_experts > 0 && c.moe_intermediate_size > 0 && c.top_k_experts > 0 &&
      c.top_k_experts <= c.num_experts && c.top_k_experts <= kMaxMoeTopK) {
    return Status::Ok();
  }
  return InvalidArgument(where + names.experts + ", " + names.width + " and " + names.top_k +
                         " must satisfy experts > 0, width > 0 and 0 < top_k <= min(experts, " +
                         std::to_string(kMaxMoeTopK) + "); got " +
                         std::to_string(c.num_experts) + ", " +
                         std::to_string(c.moe_intermediate_size) + ", " +
                         std::to_string(c.top_k_experts));
}

std::vector<KvLayout> KvLayouts(const ModelConfig& c) {
  std::vector<KvLayout> out;
  for (const LayerConfig& l : c.layers) {
    KvLayout k;
    k.index = l.index;
    k.kind = l.sliding() ? KvLayout::Kind::kSliding : KvLayout::Kind::kFull;
    k.window = l.sliding() ? c.sliding_window : 0;
    k.n_kv_heads = l.n_kv_heads;
    k.head_dim = l.head_dim;
    k.donor = l.kv_source;
    k.n_heads = l.n_heads;
    out.push_back(k);
  }
  return out;
}

}  // namespace g4
