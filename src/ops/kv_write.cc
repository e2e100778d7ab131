#include "ops/kv_write.h"

#include "core/q8_blocks.h"

namespace g4 {

const char* KvDtypeName(KvDtype t) {
  switch (t) {
    case KvDtype::kBF16: return "bf16";
    case KvDtype::kQ8: return "q8";
    default: return "f32";
  }
}

size_t KvRowBytes(KvDtype t, int64_t row) {
  const size_t n = static_cast<size_t>(row);
  switch (t) {
    case KvDtype::kBF16: return 2 * n;
    case KvDtype::kQ8: return n + n / kQ8Block * sizeof(float);
    default: return 4 * n;
  }
}

bool KvHeadFits(KvDtype t, int64_t head_dim) {
  return t != KvDtype::kQ8 || (head_dim > 0 && head_dim % kQ8Block == 0);
}

StatusOr<KvDtype> ParseKvDtype(const std::string& name) {
  if (name == "f32") return KvDtype::kF32;
  if (name == "bf16") return KvDtype::kBF16;
  if (name == "q8") return KvDtype::kQ8;
  return InvalidArgument("KV dtype \"" + name + "\": expected f32, bf16 or q8");
}

}  // namespace g4
