#include "ops/kv_write.h"

namespace g4 {

const char* KvDtypeName(KvDtype t) { return t == KvDtype::kBF16 ? "bf16" : "f32"; }

size_t KvDtypeSize(KvDtype t) { return t == KvDtype::kBF16 ? 2 : 4; }

StatusOr<KvDtype> ParseKvDtype(const std::string& name) {
  if (name == "f32") return KvDtype::kF32;
  if (name == "bf16") return KvDtype::kBF16;
  return InvalidArgument("KV dtype \"" + name + "\": expected f32 or bf16");
}

}  // namespace g4
