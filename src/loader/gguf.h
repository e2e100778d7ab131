// Reader for GGUF files (../shared/spec/formats.md §2): the header, typed key/value metadata and
// the tensor table are parsed and validated in full when the file is opened; tensor data stays
// in the memory map and is handed out as TensorViews in PyTorch dimension order (ggml's `ne`
// reversed). Block-quantized tensors (Q4_0, Q8_0, Q4_K, Q6_K, ...) become quantized views of
// the logical [N, K] shape (core/tensor.h); F32/F16/BF16 are plain views.
//
// Every count and length read from the file is checked against the bytes left before anything
// is allocated, so a hostile header cannot make the reader allocate more than the file's size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "loader/gguf_format.h"
#include "loader/mapped_file.h"

namespace g4 {

// One metadata value. Scalars are widened into the field their kind uses; arrays keep their
// element type and count, with the elements either decoded (numbers, bools, strings) or, for
// nested arrays, only validated.
struct GgufValue {
  gguf::ValueType type = gguf::ValueType::kU8;
  uint64_t u = 0;         // u8/u16/u32/u64, bool (0/1)
  int64_t i = 0;          // i8/i16/i32/i64
  double f = 0;           // f32/f64
  std::string_view str;   // string (points into the mapping)
  // Arrays.
  gguf::ValueType elem_type = gguf::ValueType::kU8;
  uint64_t count = 0;
  std::vector<int64_t> ints;          // integer and bool elements (u64 above 2^63 is rejected)
  std::vector<double> floats;         // f32/f64 elements
  std::vector<std::string_view> strs;  // string elements
};

// One entry of the tensor table.
struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  gguf::GgmlTypeInfo type;       // what the type id is (type.supported: g4 can run it)
  std::vector<int64_t> ne;       // ggml order: ne[0] innermost
  std::vector<int64_t> shape;    // PyTorch order: ne reversed
  uint64_t offset = 0;           // from the start of the data section
  uint64_t nbytes = 0;
  const void* data = nullptr;
};

class GgufFile {
 public:
  // Bounds on nesting and name sizes; real files are far below them.
  static constexpr int kMaxArrayDepth = 8;
  static constexpr uint64_t kMaxKeyBytes = 65535;
  static constexpr uint64_t kMaxTensorNameBytes = 256;

  // Maps and validates `path`. Errors name the file: DataLoss for truncation and byte ranges
  // outside the file, InvalidArgument for malformed headers (bad magic, unsupported version,
  // bad types, misaligned or overlapping tensors, ...), Unimplemented for unknown ggml types.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // True when the first four bytes of `path` are the GGUF magic (false if it cannot be read).
  static bool HasMagic(const std::string& path);

  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_start_; }
  // Bytes of the whole mapping.
  uint64_t size() const { return file_->size(); }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  bool Has(std::string_view key) const { return FindValue(key) != nullptr; }
  const GgufValue* FindValue(std::string_view key) const;

  // Typed getters. NotFound names a missing key; InvalidArgument names the key with the
  // expected and the found type (or the out-of-range value). GetInt accepts every integer type;
  // GetFloat accepts f32 and f64.
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetFloat(std::string_view key) const;
  StatusOr<bool> GetBool(std::string_view key) const;
  StatusOr<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  StatusOr<std::vector<double>> GetFloatArray(std::string_view key) const;
  StatusOr<std::vector<bool>> GetBoolArray(std::string_view key) const;
  StatusOr<std::vector<std::string>> GetStringArray(std::string_view key) const;

  // Tensors in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* Find(std::string_view name) const;
  // The tensor as a view: NotFound if absent, Unimplemented naming the tensor and its type when
  // g4 has no kernels for that type (Q2_K, Q3_K, IQ*, MXFP4, I32, ...).
  StatusOr<TensorView> Tensor(std::string_view name) const;
  static StatusOr<TensorView> View(const GgufTensorInfo& t, const std::string& file);

 private:
  explicit GgufFile(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}
  Status Parse();

  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = gguf::kDefaultAlignment;
  uint64_t data_start_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> tensor_index_;
};

}  // namespace g4
