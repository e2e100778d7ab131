// GGUF parsing and validation (see gguf.h). The parser walks the header with a bounds-checked
// cursor; each count is compared with what the remaining bytes could possibly hold (its
// elements' minimum encoded size) before a container is sized by it.
#include "loader/gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "loader/loader_util.h"

namespace g4 {
namespace {

using gguf::ValueType;
using loader_internal::Quoted;

// Little-endian reads from the mapped header; every read checks the bytes left.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  template <typename T>
  StatusOr<T> Read(const char* what) {
    if (left() < sizeof(T)) return Truncated(what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A u64-length string of at most `max_len` bytes, as a view into the mapping.
  StatusOr<std::string_view> ReadString(const char* what, uint64_t max_len) {
    G4_ASSIGN_OR_RETURN(const uint64_t len, Read<uint64_t>(what));
    if (len > left()) {
      return DataLoss(std::string(what) + " at byte " + std::to_string(pos_ - 8) +
                      " claims " + std::to_string(len) + " bytes but only " +
                      std::to_string(left()) + " remain");
    }
    if (len > max_len) {
      return InvalidArgument(std::string(what) + " at byte " + std::to_string(pos_ - 8) +
                             " is " + std::to_string(len) + " bytes long (limit " +
                             std::to_string(max_len) + ")");
    }
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

  Status Skip(uint64_t n, const char* what) {
    if (n > left()) return Truncated(what);
    pos_ += n;
    return Status::Ok();
  }

  Status Truncated(const char* what) const {
    return DataLoss(std::string("truncated: file ends at byte ") + std::to_string(size_) +
                    " while reading " + what + " at byte " + std::to_string(pos_));
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// The fewest bytes one value of type `t` takes (strings: the length; arrays: type + count).
uint64_t MinValueBytes(ValueType t) {
  if (t == ValueType::kString) return 8;
  if (t == ValueType::kArray) return 12;
  return gguf::ValueTypeSize(t);
}

bool IsIntType(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64:
      return true;
    default:
      return false;
  }
}
bool IsFloatType(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

StatusOr<ValueType> ReadType(Cursor& c, const char* what) {
  G4_ASSIGN_OR_RETURN(const uint32_t t, c.Read<uint32_t>(what));
  if (t > gguf::kMaxValueType) {
    return InvalidArgument(std::string(what) + " at byte " + std::to_string(c.pos() - 4) +
                           " is " + std::to_string(t) + " (valid types are 0..12)");
  }
  return static_cast<ValueType>(t);
}

// Reads one scalar of type `t` into the fields of `v` (u / i / f / str).
Status ReadScalar(Cursor& c, ValueType t, GgufValue* v) {
  switch (t) {
    case ValueType::kU8: { G4_ASSIGN_OR_RETURN(v->u, c.Read<uint8_t>("a u8 value")); break; }
    case ValueType::kI8: { G4_ASSIGN_OR_RETURN(v->i, c.Read<int8_t>("an i8 value")); break; }
    case ValueType::kU16: { G4_ASSIGN_OR_RETURN(v->u, c.Read<uint16_t>("a u16 value")); break; }
    case ValueType::kI16: { G4_ASSIGN_OR_RETURN(v->i, c.Read<int16_t>("an i16 value")); break; }
    case ValueType::kU32: { G4_ASSIGN_OR_RETURN(v->u, c.Read<uint32_t>("a u32 value")); break; }
    case ValueType::kI32: { G4_ASSIGN_OR_RETURN(v->i, c.Read<int32_t>("an i32 value")); break; }
    case ValueType::kU64: { G4_ASSIGN_OR_RETURN(v->u, c.Read<uint64_t>("a u64 value")); break; }
    case ValueType::kI64: { G4_ASSIGN_OR_RETURN(v->i, c.Read<int64_t>("an i64 value")); break; }
    case ValueType::kF32: { G4_ASSIGN_OR_RETURN(v->f, c.Read<float>("an f32 value")); break; }
    case ValueType::kF64: { G4_ASSIGN_OR_RETURN(v->f, c.Read<double>("an f64 value")); break; }
    case ValueType::kBool: {
      G4_ASSIGN_OR_RETURN(const uint8_t b, c.Read<uint8_t>("a bool value"));
      if (b > 1) {
        return InvalidArgument("bool value at byte " + std::to_string(c.pos() - 1) + " is " +
                               std::to_string(b) + " (expected 0 or 1)");
      }
      v->u = b;
      break;
    }
    case ValueType::kString: {
      G4_ASSIGN_OR_RETURN(v->str, c.ReadString("a string value", std::numeric_limits<uint64_t>::max()));
      break;
    }
    case ValueType::kArray:
      return Internal("ReadScalar on an array");
  }
  return Status::Ok();
}

// Reads an array body (element type, count, elements); `depth` counts enclosing arrays.
Status ReadArray(Cursor& c, int depth, GgufValue* v) {
  if (depth > GgufFile::kMaxArrayDepth) {
    return InvalidArgument("arrays nested deeper than " +
                           std::to_string(GgufFile::kMaxArrayDepth) + " levels at byte " +
                           std::to_string(c.pos()));
  }
  G4_ASSIGN_OR_RETURN(v->elem_type, ReadType(c, "an array element type"));
  G4_ASSIGN_OR_RETURN(v->count, c.Read<uint64_t>("an array count"));
  const uint64_t min_bytes = MinValueBytes(v->elem_type);
  if (v->count > c.left() / min_bytes) {
    return DataLoss("array of " + std::to_string(v->count) + " " +
                    gguf::ValueTypeName(v->elem_type) + " at byte " + std::to_string(c.pos() - 12) +
                    " needs at least " + std::to_string(min_bytes) + " bytes each but only " +
                    std::to_string(c.left()) + " remain");
  }
  const size_t n = static_cast<size_t>(v->count);  // bounded by the file size now
  if (v->elem_type == ValueType::kArray) {
    for (size_t k = 0; k < n; ++k) {
      GgufValue inner;
      G4_RETURN_IF_ERROR(ReadArray(c, depth + 1, &inner));
    }
    return Status::Ok();
  }
  if (v->elem_type == ValueType::kString) {
    v->strs.reserve(n);
  } else if (IsFloatType(v->elem_type)) {
    v->floats.reserve(n);
  } else {
    v->ints.reserve(n);
  }
  for (size_t k = 0; k < n; ++k) {
    GgufValue e;
    G4_RETURN_IF_ERROR(ReadScalar(c, v->elem_type, &e));
    switch (v->elem_type) {
      case ValueType::kString: v->strs.push_back(e.str); break;
      case ValueType::kF32: case ValueType::kF64: v->floats.push_back(e.f); break;
      case ValueType::kI8: case ValueType::kI16: case ValueType::kI32: case ValueType::kI64:
        v->ints.push_back(e.i);
        break;
      default:  // unsigned and bool
        if (e.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return InvalidArgument("u64 array element " + std::to_string(e.u) + " is out of range");
        }
        v->ints.push_back(static_cast<int64_t>(e.u));
    }
  }
  return Status::Ok();
}

Status TypeError(const std::string& file, std::string_view key, const char* expected, const GgufValue& v) {
  std::string found = gguf::ValueTypeName(v.type);
  if (v.type == ValueType::kArray) {
    found += " of ";
    found += gguf::ValueTypeName(v.elem_type);
  }
  return InvalidArgument((file.empty() ? std::string() : file + ": ") + "metadata key " + Quoted(key) + " has type " + found +
                         "; expected " + expected);
}

}  // namespace

bool GgufFile::HasMagic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  uint8_t b[4] = {};
  const size_t n = std::fread(b, 1, 4, f);
  std::fclose(f);
  uint32_t magic = 0;
  std::memcpy(&magic, b, 4);
  return n == 4 && magic == gguf::kMagic;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  std::unique_ptr<GgufFile> f(new GgufFile(std::move(mapped)));
  Status s = f->Parse();
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return f;
}

Status GgufFile::Parse() {
  Cursor c(file_->data(), file_->size());
  G4_ASSIGN_OR_RETURN(const uint32_t magic, c.Read<uint32_t>("the magic"));
  if (magic != gguf::kMagic) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08x", magic);
    return InvalidArgument(std::string("not a GGUF file: magic is ") + hex +
                           " (expected 0x46554747, \"GGUF\")");
  }
  G4_ASSIGN_OR_RETURN(version_, c.Read<uint32_t>("the version"));
  if (version_ < gguf::kMinVersion || version_ > gguf::kMaxVersion) {
    return InvalidArgument("GGUF version " + std::to_string(version_) +
                           " is not supported (g4 reads versions 2 and 3)");
  }
  G4_ASSIGN_OR_RETURN(const uint64_t n_tensors, c.Read<uint64_t>("the tensor count"));
  G4_ASSIGN_OR_RETURN(const uint64_t n_kv, c.Read<uint64_t>("the key/value count"));
  // A key/value is at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least
  // 8 (name length) + 4 (n_dims) + 8 (ne[0]) + 4 (type) + 8 (offset).
  if (n_kv > c.left() / 13) {
    return DataLoss("key/value count " + std::to_string(n_kv) + " cannot fit in the " +
                    std::to_string(c.left()) + " bytes left in the file");
  }
  if (n_tensors > c.left() / 32) {
    return DataLoss("tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                    std::to_string(c.left()) + " bytes left in the file");
  }

  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    G4_ASSIGN_OR_RETURN(const std::string_view key, c.ReadString("a metadata key", kMaxKeyBytes));
    GgufValue v;
    const std::string where = "metadata key " + Quoted(key);
    auto with_key = [&where](Status s) { return Status(s.code(), where + ": " + s.message()); };
    auto type = ReadType(c, "a value type");
    if (!type.ok()) return with_key(type.status());
    v.type = *type;
    Status s = v.type == ValueType::kArray ? ReadArray(c, 1, &v) : ReadScalar(c, v.type, &v);
    if (!s.ok()) return with_key(s);
    if (kv_index_.count(key)) return InvalidArgument(where + " appears twice");
    kv_index_.emplace(std::string(key), kv_.size());
    kv_.emplace_back(std::string(key), std::move(v));
  }

  if (const GgufValue* a = FindValue(gguf::kAlignmentKey)) {
    if (!IsIntType(a->type)) return TypeError("", gguf::kAlignmentKey, "u32", *a);
    const int64_t al = a->type == ValueType::kI8 || a->type == ValueType::kI16 ||
                               a->type == ValueType::kI32 || a->type == ValueType::kI64
                           ? a->i : static_cast<int64_t>(std::min<uint64_t>(a->u, 1u << 31));
    if (al <= 0 || al > (int64_t{1} << 20) || (al & (al - 1)) != 0) {
      return InvalidArgument(std::string(gguf::kAlignmentKey) + " = " + std::to_string(al) +
                             " must be a power of two between 1 and 2^20");
    }
    alignment_ = static_cast<uint64_t>(al);
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    G4_ASSIGN_OR_RETURN(const std::string_view name,
                        c.ReadString("a tensor name", kMaxTensorNameBytes));
    t.name = std::string(name);
    const std::string where = "tensor " + Quoted(name);
    auto with_name = [&where](Status s) { return Status(s.code(), where + ": " + s.message()); };
    auto n_dims = c.Read<uint32_t>("n_dims");
    if (!n_dims.ok()) return with_name(n_dims.status());
    if (*n_dims == 0 || *n_dims > gguf::kMaxDims) {
      return InvalidArgument(where + " has n_dims " + std::to_string(*n_dims) +
                             " (expected 1 to 4)");
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < *n_dims; ++d) {
      auto ne = c.Read<uint64_t>("ne");
      if (!ne.ok()) return with_name(ne.status());
      if (*ne == 0 || *ne > (uint64_t{1} << 40)) {
        return InvalidArgument(where + " has ne[" + std::to_string(d) + "] = " +
                               std::to_string(*ne) + " (expected 1 to 2^40)");
      }
      if (numel > (uint64_t{1} << 50) / *ne) {
        return InvalidArgument(where + " has too many elements (shape overflows)");
      }
      numel *= *ne;
      t.ne.push_back(static_cast<int64_t>(*ne));
    }
    t.shape.assign(t.ne.rbegin(), t.ne.rend());
    auto type = c.Read<uint32_t>("the ggml type");
    if (!type.ok()) return with_name(type.status());
    t.ggml_type = *type;
    t.type = gguf::GgmlTypeLookup(t.ggml_type);
    if (!t.type.name) {
      return Unimplemented(where + " has unknown ggml type id " + std::to_string(t.ggml_type));
    }
    if (t.ne[0] % t.type.block_elems != 0) {
      return InvalidArgument(where + " (" + t.type.name + ") has ne[0] = " +
                             std::to_string(t.ne[0]) + ", not a multiple of the block size " +
                             std::to_string(t.type.block_elems));
    }
    t.nbytes = numel / static_cast<uint64_t>(t.type.block_elems) *
               static_cast<uint64_t>(t.type.block_bytes);
    auto offset = c.Read<uint64_t>("the data offset");
    if (!offset.ok()) return with_name(offset.status());
    t.offset = *offset;
    if (t.offset % alignment_ != 0) {
      return InvalidArgument(where + " has offset " + std::to_string(t.offset) +
                             ", not a multiple of the alignment " + std::to_string(alignment_));
    }
    if (tensor_index_.count(t.name)) return InvalidArgument(where + " appears twice");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t size = file_->size();
  data_start_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_start_ > size) {
    return DataLoss("truncated: the data section would start at byte " +
                    std::to_string(data_start_) + " but the file has " + std::to_string(size));
  }
  std::vector<size_t> order(tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  for (GgufTensorInfo& t : tensors_) {
    const uint64_t room = size - std::min(size, data_start_);
    if (t.offset > room || t.nbytes > room - t.offset) {
      return DataLoss("tensor " + Quoted(t.name) + " occupies bytes " +
                      loader_internal::ByteRange(data_start_ + t.offset,
                                                 data_start_ + t.offset + t.nbytes) +
                      " past the end of the file (" + std::to_string(size) + " bytes)");
    }
    t.data = file_->data() + data_start_ + t.offset;
  }
  std::sort(order.begin(), order.end(),
            [this](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = tensors_[order[k - 1]];
    const GgufTensorInfo& next = tensors_[order[k]];
    if (prev.offset + prev.nbytes > next.offset) {
      return InvalidArgument("tensors " + Quoted(prev.name) + " and " + Quoted(next.name) +
                             " overlap in the data section");
    }
  }
  return Status::Ok();
}

const GgufValue* GgufFile::FindValue(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kString) return TypeError(path(), key, "string", *v);
  return std::string(v->str);
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (!IsIntType(v->type)) return TypeError(path(), key, "an integer", *v);
  if (v->type == ValueType::kU8 || v->type == ValueType::kU16 || v->type == ValueType::kU32 ||
      v->type == ValueType::kU64) {
    if (v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument(path() + ": metadata key " + Quoted(key) + " = " + std::to_string(v->u) +
                             " is out of range");
    }
    return static_cast<int64_t>(v->u);
  }
  return v->i;
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (!IsFloatType(v->type)) return TypeError(path(), key, "f32", *v);
  return v->f;
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kBool) return TypeError(path(), key, "bool", *v);
  return v->u != 0;
}

StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kArray || !IsIntType(v->elem_type)) {
    return TypeError(path(), key, "an array of integers", *v);
  }
  return v->ints;
}

StatusOr<std::vector<double>> GgufFile::GetFloatArray(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kArray || !IsFloatType(v->elem_type)) {
    return TypeError(path(), key, "an array of f32", *v);
  }
  return v->floats;
}

StatusOr<std::vector<bool>> GgufFile::GetBoolArray(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kArray || v->elem_type != ValueType::kBool) {
    return TypeError(path(), key, "an array of bool", *v);
  }
  return std::vector<bool>(v->ints.begin(), v->ints.end());
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  const GgufValue* v = FindValue(key);
  if (!v) return NotFound(path() + ": metadata key " + Quoted(key) + " is missing");
  if (v->type != ValueType::kArray || v->elem_type != ValueType::kString) {
    return TypeError(path(), key, "an array of string", *v);
  }
  return std::vector<std::string>(v->strs.begin(), v->strs.end());
}

const GgufTensorInfo* GgufFile::Find(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<TensorView> GgufFile::View(const GgufTensorInfo& t, const std::string& file) {
  if (!t.type.supported) {
    return Unimplemented(file + ": tensor " + Quoted(t.name) + " has ggml type " + t.type.name +
                         ", which g4 does not support (supported: F32, F16, BF16, Q4_0, Q4_1, "
                         "Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K)");
  }
  if (t.type.quant == QuantKind::kNone) return TensorView(t.data, t.type.dtype, t.shape);
  const int64_t K = t.ne[0];
  QuantInfo q;
  q.kind = t.type.quant;
  q.group_size = t.type.block_elems;
  q.row_bytes = K / t.type.block_elems * t.type.block_bytes;
  // The logical [N, K] or [E, N, K] (experts); any other rank folds its outer dimensions into
  // rows.
  const int64_t N = static_cast<int64_t>(t.nbytes / static_cast<uint64_t>(q.row_bytes));
  std::vector<int64_t> shape =
      t.shape.size() == 2 || t.shape.size() == 3 ? t.shape : std::vector<int64_t>{N, K};
  return TensorView(t.data, DType::kU8, std::move(shape), q);
}

StatusOr<TensorView> GgufFile::Tensor(std::string_view name) const {
  const GgufTensorInfo* t = Find(name);
  if (!t) return NotFound(path() + ": missing tensor " + Quoted(name));
  return View(*t, path());
}

}  // namespace g4
