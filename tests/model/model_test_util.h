// Helpers shared by the model tests that damage a checkpoint on purpose.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "loader/safetensors.h"
#include "loader/safetensors_writer.h"

namespace g4::model_test {

// Rewrites `dir`/model.safetensors in place: `edit` may rename, reshape or drop (return false)
// each tensor, whose bytes are copied (cut or zero-padded to its new size); the `extra` specs
// are appended, zero-filled.
inline void RewriteSafetensors(const std::filesystem::path& dir,
                               const std::function<bool(TensorSpec&)>& edit,
                               std::vector<TensorSpec> extra = {}) {
  const std::filesystem::path path = dir / "model.safetensors";
  auto file = SafetensorsFile::Open(path.string());
  ASSERT_TRUE(file.ok());
  std::vector<TensorSpec> specs;
  std::vector<const TensorInfo*> sources;
  for (const TensorInfo& t : (*file)->tensors()) {
    TensorSpec s{t.name, t.dtype, t.shape};
    if (!edit(s)) continue;
    specs.push_back(s);
    sources.push_back(&t);
  }
  for (TensorSpec& s : extra) {
    specs.push_back(std::move(s));
    sources.push_back(nullptr);
  }
  auto fill = [&](size_t i, ByteSink& sink) -> Status {
    size_t n = DTypeSize(specs[i].dtype);
    for (int64_t d : specs[i].shape) n *= static_cast<size_t>(d);
    std::vector<uint8_t> bytes(n, 0);
    if (sources[i]) std::memcpy(bytes.data(), sources[i]->data, std::min(n, sources[i]->nbytes));
    return sink.Write(bytes.data(), bytes.size());
  };
  const std::filesystem::path tmp = dir / "rewritten.safetensors";
  ASSERT_TRUE(WriteSafetensors(tmp.string(), specs, fill).ok());
  file->reset();
  std::filesystem::rename(tmp, path);
}

}  // namespace g4::model_test
