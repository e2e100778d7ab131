// GGUF writing: little-endian metadata encoding, tensor-info layout with aligned offsets, and
// buffered output through a temporary file.
#include "loader/gguf_writer.h"

#include <cstring>
#include <utility>

#include "core/tensor.h"
#include "loader/output_file.h"

namespace g4 {
namespace {

using gguf::ValueType;
using loader_internal::OutputFile;
using loader_internal::TensorSink;

constexpr size_t kMaxKeyBytes = 65535;
constexpr size_t kMaxNameBytes = 64;

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

template <typename T>
void Append(std::string* out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host (formats.md §2.1)
  out->append(b, sizeof(T));
}

void AppendString(std::string* out, std::string_view s) {
  Append<uint64_t>(out, s.size());
  out->append(s);
}

}  // namespace

bool GgufMetadata::BeginKey(std::string_view key, ValueType type) {
  if (!error_.ok()) return false;
  if (key.empty() || key.size() > kMaxKeyBytes) {
    error_ = InvalidArgument("GGUF metadata key '" + std::string(key.substr(0, 80)) +
                             "': empty or longer than 65535 bytes");
    return false;
  }
  if (!keys_.insert(std::string(key)).second) {
    error_ = InvalidArgument("GGUF metadata key '" + std::string(key) + "' set twice");
    return false;
  }
  AppendString(&bytes_, key);
  Append<uint32_t>(&bytes_, static_cast<uint32_t>(type));
  ++count_;
  return true;
}

void GgufMetadata::BeginArray(std::string_view key, ValueType elem, uint64_t n) {
  if (!BeginKey(key, ValueType::kArray)) return;
  Append<uint32_t>(&bytes_, static_cast<uint32_t>(elem));
  Append<uint64_t>(&bytes_, n);
}

#define G4_GGUF_SCALAR(Name, T, VT)                                   \
  void GgufMetadata::Set##Name(std::string_view key, T v) {           \
    if (BeginKey(key, ValueType::VT)) Append<T>(&bytes_, v);          \
  }
G4_GGUF_SCALAR(U8, uint8_t, kU8)
G4_GGUF_SCALAR(I8, int8_t, kI8)
G4_GGUF_SCALAR(U16, uint16_t, kU16)
G4_GGUF_SCALAR(I16, int16_t, kI16)
G4_GGUF_SCALAR(I32, int32_t, kI32)
G4_GGUF_SCALAR(U64, uint64_t, kU64)
G4_GGUF_SCALAR(I64, int64_t, kI64)
G4_GGUF_SCALAR(F32, float, kF32)
G4_GGUF_SCALAR(F64, double, kF64)
#undef G4_GGUF_SCALAR

void GgufMetadata::SetU32(std::string_view key, uint32_t v) {
  if (key == gguf::kAlignmentKey) {
    if (v == 0 || v % 8 != 0) {
      if (error_.ok()) {
        error_ = InvalidArgument(std::string(gguf::kAlignmentKey) + " = " + std::to_string(v) +
                                 ": must be a positive multiple of 8");
      }
      return;
    }
    alignment_ = v;
  }
  if (BeginKey(key, ValueType::kU32)) Append<uint32_t>(&bytes_, v);
}

void GgufMetadata::SetBool(std::string_view key, bool v) {
  if (BeginKey(key, ValueType::kBool)) Append<uint8_t>(&bytes_, v ? 1 : 0);
}

void GgufMetadata::SetString(std::string_view key, std::string_view v) {
  if (BeginKey(key, ValueType::kString)) AppendString(&bytes_, v);
}

void GgufMetadata::SetU32Array(std::string_view key, std::span<const uint32_t> v) {
  BeginArray(key, ValueType::kU32, v.size());
  if (error_.ok()) for (uint32_t x : v) Append(&bytes_, x);
}
void GgufMetadata::SetI32Array(std::string_view key, std::span<const int32_t> v) {
  BeginArray(key, ValueType::kI32, v.size());
  if (error_.ok()) for (int32_t x : v) Append(&bytes_, x);
}
void GgufMetadata::SetF32Array(std::string_view key, std::span<const float> v) {
  BeginArray(key, ValueType::kF32, v.size());
  if (error_.ok()) for (float x : v) Append(&bytes_, x);
}
void GgufMetadata::SetBoolArray(std::string_view key, const std::vector<bool>& v) {
  BeginArray(key, ValueType::kBool, v.size());
  if (error_.ok()) for (bool x : v) Append<uint8_t>(&bytes_, x ? 1 : 0);
}
void GgufMetadata::SetStringArray(std::string_view key, std::span<const std::string> v) {
  BeginArray(key, ValueType::kString, v.size());
  if (error_.ok()) for (const std::string& s : v) AppendString(&bytes_, s);
}
void GgufMetadata::SetStringArray(std::string_view key, std::span<const std::string_view> v) {
  BeginArray(key, ValueType::kString, v.size());
  if (error_.ok()) for (std::string_view s : v) AppendString(&bytes_, s);
}

StatusOr<uint64_t> GgufTensorBytes(const GgufTensorSpec& spec) {
  const std::string ctx = "GGUF tensor '" + spec.name + "'";
  const gguf::GgmlTypeInfo info = gguf::GgmlTypeLookup(spec.ggml_type);
  if (info.name == nullptr) {
    return InvalidArgument(ctx + ": unknown ggml type " + std::to_string(spec.ggml_type));
  }
  if (spec.shape.empty() || spec.shape.size() > gguf::kMaxDims) {
    return InvalidArgument(ctx + ": " + std::to_string(spec.shape.size()) +
                           " dimensions (GGUF holds 1 to 4)");
  }
  uint64_t n = 1;
  for (int64_t d : spec.shape) {
    if (d <= 0) return InvalidArgument(ctx + ": non-positive dimension in " + ShapeToString(spec.shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
      return InvalidArgument(ctx + ": shape " + ShapeToString(spec.shape) + " overflows");
    }
  }
  if (spec.shape.back() % info.block_elems != 0) {
    return InvalidArgument(ctx + ": innermost dimension " + std::to_string(spec.shape.back()) +
                           " is not a multiple of " + info.name + "'s block of " +
                           std::to_string(info.block_elems));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n / info.block_elems, static_cast<uint64_t>(info.block_bytes), &bytes)) {
    return InvalidArgument(ctx + ": size overflows");
  }
  return bytes;
}

Status WriteGguf(const std::string& path, const GgufMetadata& metadata,
                 const std::vector<GgufTensorSpec>& specs, const TensorFill& fill) {
  if (!metadata.error().ok()) return metadata.error().WithContext(path);
  const uint64_t alignment = metadata.alignment();
  std::vector<uint64_t> bytes;
  bytes.reserve(specs.size());
  std::unordered_set<std::string_view> names;
  std::string infos;
  uint64_t offset = 0;
  for (const GgufTensorSpec& s : specs) {
    if (s.name.empty() || s.name.size() > kMaxNameBytes) {
      return InvalidArgument(path + ": tensor name '" + s.name + "' is empty or over 64 bytes");
    }
    if (!names.insert(s.name).second) {
      return InvalidArgument(path + ": duplicate tensor name '" + s.name + "'");
    }
    StatusOr<uint64_t> n = GgufTensorBytes(s);
    if (!n.ok()) return n.status().WithContext(path);
    bytes.push_back(*n);
    AppendString(&infos, s.name);
    Append<uint32_t>(&infos, static_cast<uint32_t>(s.shape.size()));
    for (size_t d = s.shape.size(); d-- > 0;) Append<uint64_t>(&infos, s.shape[d]);
    Append<uint32_t>(&infos, s.ggml_type);
    Append<uint64_t>(&infos, offset);
    offset = AlignUp(offset + *n, alignment);
  }
  if (!specs.empty() && !fill) return InvalidArgument(path + ": no fill callback given");

  OutputFile out(path);
  G4_RETURN_IF_ERROR(out.Open());
  std::string header;
  Append<uint32_t>(&header, gguf::kMagic);
  Append<uint32_t>(&header, gguf::kWriteVersion);
  Append<uint64_t>(&header, specs.size());
  Append<uint64_t>(&header, metadata.count());
  G4_RETURN_IF_ERROR(out.Write(header.data(), header.size()));
  G4_RETURN_IF_ERROR(out.Write(metadata.bytes().data(), metadata.bytes().size()));
  G4_RETURN_IF_ERROR(out.Write(infos.data(), infos.size()));
  G4_RETURN_IF_ERROR(out.PadTo(alignment));
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string ctx = path + ": tensor '" + specs[i].name + "'";
    TensorSink sink(&out, ctx, bytes[i]);
    G4_RETURN_IF_ERROR(sink.Finish(fill(i, sink)));
    G4_RETURN_IF_ERROR(out.PadTo(alignment));
  }
  return out.Commit();
}

}  // namespace g4
