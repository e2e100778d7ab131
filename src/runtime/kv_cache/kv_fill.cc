#include "runtime/kv_cache/kv_fill.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace g4 {

Status FillKvCache(const ModelInfo& info, Backend& backend, SequenceKvCache& cache, int32_t n,
                   uint32_t seed) {
  if (cache.memory().is_device()) {
    return InvalidArgument("--kv-fill: the cache is in device memory (host caches only)");
  }
  if (n > cache.max_context()) {
    return InvalidArgument("--kv-fill: " + std::to_string(n) + " positions exceed the cache's " +
                           std::to_string(cache.max_context()));
  }
  constexpr int32_t kChunk = 256;  // positions per write: a ring's scratch stays small
  const KvWriter write = [&backend](const KvWriteArgs& a) { backend.KvWrite(a); };
  std::vector<int32_t> pos;
  std::vector<float> k, v;
  uint32_t s = seed * 2654435761u + 1u;
  const auto next = [&s] {  // LCG: cheap, 2 x 10^9 values for E2B at 128K
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  };
  for (int32_t p0 = cache.size(); p0 < n; p0 += kChunk) {
    const int32_t C = std::min(kChunk, n - p0);
    pos.resize(static_cast<size_t>(C));
    std::iota(pos.begin(), pos.end(), p0);
    G4_RETURN_IF_ERROR(cache.Reserve(pos.data(), C));
    for (const KvLayout& l : info.layers) {
      if (l.shared()) continue;
      const size_t values = static_cast<size_t>(C) * l.n_kv_heads * l.head_dim;
      k.resize(values);
      v.resize(values);
      std::generate(k.begin(), k.end(), next);
      std::generate(v.begin(), v.end(), next);
      G4_RETURN_IF_ERROR(cache.Write(write, l.index, k.data(), v.data(), pos.data(), C).status());
    }
  }
  return Status::Ok();
}

}  // namespace g4
