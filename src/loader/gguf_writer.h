// Streaming GGUF v3 writer (../shared/spec/formats.md §2.1). Metadata is encoded as it is added
// (a 262k-token vocabulary is ~10 MB); tensor bytes are pulled from a fill callback straight into
// a buffered file, so a multi-GB model never sits in memory. Shapes are given in PyTorch order
// and written as ggml's reversed `ne`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "loader/gguf_format.h"
#include "loader/safetensors_writer.h"  // ByteSink, TensorFill

namespace g4 {

// Key/value pairs in insertion order, already in their on-disk encoding. A key may be set once;
// a second Set of the same key, an empty key or one over 65535 bytes makes Write fail with
// InvalidArgument naming the key (the first such error is kept).
class GgufMetadata {
 public:
  void SetU8(std::string_view key, uint8_t v);
  void SetI8(std::string_view key, int8_t v);
  void SetU16(std::string_view key, uint16_t v);
  void SetI16(std::string_view key, int16_t v);
  void SetU32(std::string_view key, uint32_t v);
  void SetI32(std::string_view key, int32_t v);
  void SetU64(std::string_view key, uint64_t v);
  void SetI64(std::string_view key, int64_t v);
  void SetF32(std::string_view key, float v);
  void SetF64(std::string_view key, double v);
  void SetBool(std::string_view key, bool v);
  void SetString(std::string_view key, std::string_view v);

  void SetU32Array(std::string_view key, std::span<const uint32_t> v);
  void SetI32Array(std::string_view key, std::span<const int32_t> v);
  void SetF32Array(std::string_view key, std::span<const float> v);
  void SetBoolArray(std::string_view key, const std::vector<bool>& v);
  void SetStringArray(std::string_view key, std::span<const std::string> v);
  void SetStringArray(std::string_view key, std::span<const std::string_view> v);

  uint64_t count() const { return count_; }
  const std::string& bytes() const { return bytes_; }
  const Status& error() const { return error_; }
  // general.alignment if set (as u32), else the format default.
  uint64_t alignment() const { return alignment_; }

 private:
  bool BeginKey(std::string_view key, gguf::ValueType type);
  void BeginArray(std::string_view key, gguf::ValueType elem, uint64_t n);
  template <typename T>
  void Put(T v);
  void PutString(std::string_view s);

  std::string bytes_;
  uint64_t count_ = 0;
  std::unordered_set<std::string> keys_;
  uint64_t alignment_ = gguf::kDefaultAlignment;
  Status error_;
};

struct GgufTensorSpec {
  std::string name;            // <= 64 bytes, unique
  std::vector<int64_t> shape;  // PyTorch order, 1..4 dims; written reversed as ggml ne
  uint32_t ggml_type = 0;      // gguf::GgmlType id
};

// Bytes of a tensor of `spec`'s shape and type; InvalidArgument (naming the tensor) for an
// unknown type, a bad shape, or an innermost dimension that is not a multiple of the block.
StatusOr<uint64_t> GgufTensorBytes(const GgufTensorSpec& spec);

// Writes a GGUF v3 file: header, `metadata`, the tensor infos (offsets aligned to
// metadata.alignment()), then each tensor's bytes from fill(i, sink) (exactly
// GgufTensorBytes(specs[i]) bytes, else Internal naming the tensor), each padded with zeros.
// Writes PATH.partial and renames it over `path` only on success.
Status WriteGguf(const std::string& path, const GgufMetadata& metadata,
                 const std::vector<GgufTensorSpec>& specs, const TensorFill& fill);

}  // namespace g4
