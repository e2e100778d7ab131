#include "common/golden_cases.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace g4::testing {
namespace fs = std::filesystem;

std::string SharedGoldenDir() { return std::string(G4_SOURCE_DIR) + "/../shared/golden"; }

std::vector<GoldenCase> FindGoldenCases() {
  std::vector<GoldenCase> out;
  const std::pair<std::string, std::string> roots[] = {
      {"golden", SharedGoldenDir()},
      {"hf", std::string(G4_SOURCE_DIR) + "/tests/data/hf"},
      {"hf-gemma3", std::string(G4_SOURCE_DIR) + "/tests/data/hf-gemma3"},
  };
  for (const auto& [label, root] : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    std::vector<GoldenCase> found;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (fs::exists(e.path() / "meta.json") && fs::exists(e.path() / "logits.f32")) {
        found.push_back({label + "/" + e.path().filename().string(), e.path().string()});
      }
    }
    std::sort(found.begin(), found.end(),
              [](const GoldenCase& a, const GoldenCase& b) { return a.name < b.name; });
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<float> ReadF32File(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return {};
  const auto size = static_cast<size_t>(f.tellg());
  std::vector<float> v(size / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
}

std::vector<int32_t> ReadIds(const std::string& path) {
  std::vector<int32_t> ids;
  for (const auto& x : ReadJson(path)) ids.push_back(x.get<int32_t>());
  return ids;
}

}  // namespace g4::testing
