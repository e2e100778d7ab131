// Discovery and loading of golden cases: ../shared/golden/<case>/ (NumPy float64 reference),
// tests/data/hf/<case>/ (Gemma 4) and tests/data/hf-gemma3/<case>/ (Gemma 3) (Hugging Face
// transformers, fp32). Each case folder holds a
// checkpoint, input_ids.json, logits.f32 [T, vocab] and meta.json (tolerance, argmax).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace g4::testing {

struct GoldenCase {
  std::string name;  // "golden/tiny-short", "hf/hf-e2b-like", "hf-gemma3/hf-gemma3-270m-like"
  std::string dir;
};

// Folder of the shared golden cases (../shared/golden from the repo root).
std::string SharedGoldenDir();
// All case folders that exist; shared ones first.
std::vector<GoldenCase> FindGoldenCases();

// Raw little-endian float32 file; empty on error.
std::vector<float> ReadF32File(const std::string& path);
nlohmann::json ReadJson(const std::string& path);
// A mixture-of-experts case (meta.json -> model.moe, written by scripts/make_reference.py).
inline bool IsMoeCase(const nlohmann::json& meta) {
  return meta.contains("model") && meta["model"].is_object() && meta["model"].contains("moe");
}
// An MoE case whose router scores tie at the k-th choice (hf-moe-ties): it pins torch.topk's
// CPU tie order, which only the host kernels follow (the CUDA kernel takes the lowest index).
inline bool HasRouterTies(const nlohmann::json& meta) {
  return IsMoeCase(meta) && meta["model"]["moe"].value("rows_with_a_tie_at_k", 0) > 0;
}
std::vector<int32_t> ReadIds(const std::string& path);

}  // namespace g4::testing
