// OpProfiler (see profiler.h): category names and the matmul classification.
#include "ops/profiler.h"

namespace g4 {

const char* OpProfiler::CategoryName(Category c) {
  switch (c) {
    case kMatVecF32: return "matvec f32";
    case kMatVecBf16: return "matvec bf16";
    case kMatVecF16: return "matvec f16";
    case kMatVecInt4: return "matvec int4";
    case kMatVecInt8: return "matvec int8";
    case kMatVecGguf: return "matvec gguf";
    case kLmHead: return "lm head";
    case kAttention: return "attention";
    case kNorm: return "norms";
    case kRope: return "rope";
    case kElementwise: return "elementwise";
    case kEmbed: return "embed";
    case kMoe: return "moe";
    case kNumCategories: break;
  }
  return "?";
}

OpProfiler::Category OpProfiler::MatMulCategory(const TensorView& w) {
  if (lm_head_rows_ > 0 && !w.shape.empty() && w.dim(0) == lm_head_rows_) {
    if (lm_head_storage_.empty()) lm_head_storage_ = StorageName(w);
    return kLmHead;
  }
  switch (w.quant.kind) {
    case QuantKind::kInt4Group: return kMatVecInt4;
    case QuantKind::kInt8Group: return kMatVecInt8;
    default: break;
  }
  if (IsGgufBlock(w.quant.kind)) return kMatVecGguf;
  switch (w.dtype) {
    case DType::kBF16: return kMatVecBf16;
    case DType::kF16: return kMatVecF16;
    default: return kMatVecF32;
  }
}

void OpProfiler::Reset() {
  seconds_.fill(0.0);
  calls_.fill(0);
  merged_calls_ = 0;
  lm_head_storage_.clear();
}

int64_t OpProfiler::ops() const {
  int64_t n = -merged_calls_;
  for (int64_t c : calls_) n += c;
  return n;
}

double OpProfiler::total_seconds() const {
  double t = 0;
  for (double s : seconds_) t += s;
  return t;
}

}  // namespace g4
