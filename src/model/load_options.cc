#include "model/load_options.h"

namespace g4 {

StatusOr<HeadMode> ParseHeadMode(const std::string& name) {
  if (name == "auto") return HeadMode::kAuto;
  if (name == "bf16" || name == "as-stored") return HeadMode::kAsStored;
  if (name == "q8") return HeadMode::kQ8;
  if (name == "q4") return HeadMode::kQ4;
  if (name == "q8_0") return HeadMode::kQ8_0;
  if (name == "q6_k") return HeadMode::kQ6_K;
  return InvalidArgument("unknown head mode '" + name +
                         "' (expected auto, bf16, q8, q4, q8_0, q6_k)");
}

const char* HeadModeName(HeadMode mode) {
  switch (mode) {
    case HeadMode::kAuto: return "auto";
    case HeadMode::kAsStored: return "bf16";
    case HeadMode::kQ8: return "q8";
    case HeadMode::kQ4: return "q4";
    case HeadMode::kQ8_0: return "q8_0";
    case HeadMode::kQ6_K: return "q6_k";
  }
  return "?";
}

}  // namespace g4
