// Reader for the safetensors checkpoint format: an 8-byte little-endian header length N, N
// bytes of JSON describing each tensor, then the raw tensor bytes. The file is memory-mapped
// and every header field is validated before any tensor pointer is handed out; tensor data
// is never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "loader/mapped_file.h"

namespace g4 {

// One tensor in a checkpoint file. `data` points into the file's mapping and stays valid as
// long as the SafetensorsFile (or WeightStore) that owns it. It may be misaligned for the
// dtype: safetensors only guarantees byte offsets, and kernels use unaligned loads.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // path of the file holding it, for error messages

  TensorView view() const { return TensorView{data, dtype, shape}; }
};

// Headers bigger than this are rejected as corrupt; real ones are well under 10 MiB.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;

class SafetensorsFile {
 public:
  // Maps and validates `path`. Errors name the file and, where relevant, the tensor and field:
  // DataLoss for truncation or byte ranges outside the file, InvalidArgument for malformed
  // headers, Unimplemented for safetensors dtypes g4 does not handle (BOOL, F64, F8_*, ...).
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Tensors in file order (ascending data offset).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr if there is no tensor called `name`.
  const TensorInfo* Find(std::string_view name) const;
  const std::string& path() const { return file_->path(); }
  // The optional "__metadata__" string map (e.g. {"format": "pt"}).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  explicit SafetensorsFile(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}

  // Heterogeneous lookup so Find() takes a string_view without building a std::string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::unique_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace g4
