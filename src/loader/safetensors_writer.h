// Streaming safetensors writer. The header is computed from shapes alone, then each tensor's
// bytes are pulled from a caller-supplied fill callback straight into a buffered file, so a
// checkpoint never has to sit in memory. Also writes Hugging Face style sharded checkpoints
// (model-0000K-of-0000N.safetensors + model.safetensors.index.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace g4 {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

// Where a fill callback writes a tensor's raw little-endian bytes, in as many calls as it likes.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Write(const void* p, size_t n) = 0;
};

// Writes the bytes of specs[index] to `sink`: exactly numel * DTypeSize(dtype) in total.
using TensorFill = std::function<Status(size_t index, ByteSink& sink)>;

// Writes `specs` (in the given order) to `path`. The header JSON is padded with spaces so the
// data section starts 8-byte aligned; `metadata` becomes "__metadata__" when non-empty.
// Calls fill(i, sink) for each tensor in order and fails with Internal if it writes a
// different byte count. Writes PATH.partial and renames it over `path` only on success, so a
// failure never leaves a half-written file at `path`. Errors name the path and tensor.
Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                        const TensorFill& fill,
                        const std::map<std::string, std::string>& metadata = {});

// Writes `specs` into directory `dir` (created if missing) like Hugging Face save_pretrained:
// a single "model.safetensors" if the total tensor bytes fit in max_shard_bytes, else
// "model-00001-of-0000N.safetensors"... (tensors in order, a new shard whenever the next
// tensor would overflow max_shard_bytes; a tensor larger than that gets a shard of its own)
// plus "model.safetensors.index.json" ({"metadata": {"total_size": ...}, "weight_map": {...}}),
// written last. `fill` receives indices into `specs`. On success, weight files left in `dir` by
// an earlier save (model.safetensors, the index, model-*-of-*.safetensors) that are not part of
// this one are deleted so the directory cannot be read as a mix of two checkpoints.
Status WriteShardedSafetensors(const std::string& dir, const std::vector<TensorSpec>& specs,
                               uint64_t max_shard_bytes, const TensorFill& fill,
                               const std::map<std::string, std::string>& metadata = {});

}  // namespace g4
