// Safetensors parsing and validation. Nothing in the header is trusted: lengths, offsets and
// shapes are checked for overflow and against the mapped size before a pointer is formed.
#include "loader/safetensors.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "loader/json_file.h"
#include "loader/loader_util.h"

namespace g4 {
namespace {

using loader_internal::ByteRange;
using loader_internal::Quoted;

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kLengthFieldBytes = 8;

// Where the header and data section lie inside the mapped file.
struct Layout {
  std::string_view header;
  const uint8_t* data = nullptr;
  uint64_t data_size = 0;
};

// A validated tensor entry, before its data pointer is formed.
struct Entry {
  TensorInfo info;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Dtypes the safetensors format defines but g4 has no kernels for: reported as unsupported
// rather than unknown, so a user knows the file is fine and g4 is the limit.
bool IsOtherSafetensorsDType(std::string_view s) {
  static constexpr std::array<std::string_view, 13> kNames = {
      "BOOL", "F4",  "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0",
      "I16",  "U16", "U32",     "U64",     "F64",     "C64"};
  return std::find(kNames.begin(), kNames.end(), s) != kNames.end();
}

// A short rendering of a JSON value for error messages: scalars verbatim, containers by type.
std::string Describe(const json& v) {
  if (v.is_primitive()) return v.dump();
  return std::string("a JSON ") + v.type_name();
}

// `v` as a non-negative integer; nullopt for negatives, floats and non-numbers.
std::optional<uint64_t> AsNonNegativeInt(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= 0) return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

uint64_t ReadLittleEndianU64(const uint8_t* p) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(p[i]) << (8 * i);
  return n;
}

StatusOr<Layout> ReadLayout(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size() < kLengthFieldBytes) {
    return DataLoss(path + ": truncated: the file is " + std::to_string(file.size()) +
                    " bytes, shorter than the 8-byte header length");
  }
  const uint64_t header_len = ReadLittleEndianU64(file.data());
  const uint64_t after_length = file.size() - kLengthFieldBytes;
  if (header_len > after_length) {
    return DataLoss(path + ": truncated: header length " + std::to_string(header_len) +
                    " runs past the end of the file (" + std::to_string(after_length) +
                    " bytes follow the length field)");
  }
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return InvalidArgument(path + ": header length " + std::to_string(header_len) +
                           " exceeds the sanity cap of " +
                           std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  Layout layout;
  const char* header_begin = reinterpret_cast<const char*>(file.data()) + kLengthFieldBytes;
  layout.header = std::string_view(header_begin, static_cast<size_t>(header_len));
  layout.data = file.data() + kLengthFieldBytes + header_len;
  layout.data_size = after_length - header_len;
  return layout;
}

// Parses the header JSON, rejecting repeated top-level keys (nlohmann would silently keep
// the last one, hiding a corrupt or hand-edited file).
StatusOr<json> ParseHeader(const std::string& path, std::string_view text) {
  std::unordered_set<std::string> seen;
  std::string duplicate;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  G4_ASSIGN_OR_RETURN(json header, ParseJson(text, path + ": header", callback));
  if (!header.is_object()) {
    return InvalidArgument(path + ": header is not a JSON object (found " +
                           std::string(header.type_name()) + ")");
  }
  if (!duplicate.empty()) {
    return InvalidArgument(path + ": duplicate tensor name " + Quoted(duplicate) +
                           " in the header");
  }
  return header;
}

Status ParseMetadata(const std::string& path, const json& value,
                     std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) {
    return InvalidArgument(path + ": " + std::string(kMetadataKey) + " is " + Describe(value) +
                           ", expected an object of strings");
  }
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      return InvalidArgument(path + ": " + std::string(kMetadataKey) + " field " + Quoted(key) +
                             " is " + Describe(v) + ", expected a string");
    }
    (*metadata)[key] = v.get<std::string>();
  }
  return Status::Ok();
}

// `ctx` is "PATH: tensor 'NAME'" in the functions below.
StatusOr<DType> ParseDTypeField(const std::string& ctx, const json& entry) {
  const auto it = entry.find("dtype");
  if (it == entry.end() || !it->is_string()) {
    return InvalidArgument(ctx + ": field 'dtype' is missing or not a string");
  }
  const std::string& name = it->get_ref<const std::string&>();
  if (std::optional<DType> dtype = ParseDType(name)) return *dtype;
  if (IsOtherSafetensorsDType(name)) {
    return Unimplemented(ctx + ": unsupported dtype " + Quoted(name) +
                         " (g4 reads F32, F16, BF16, I32, I64, U8, I8)");
  }
  return InvalidArgument(ctx + ": unknown dtype " + Quoted(name));
}

StatusOr<std::vector<int64_t>> ParseShapeField(const std::string& ctx, const json& entry) {
  const auto it = entry.find("shape");
  if (it == entry.end() || !it->is_array()) {
    return InvalidArgument(ctx + ": field 'shape' is missing or not an array");
  }
  std::vector<int64_t> shape;
  shape.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& dim = (*it)[i];
    const std::optional<uint64_t> d = AsNonNegativeInt(dim);
    if (!d || *d > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgument(ctx + ": field 'shape' element " + std::to_string(i) + " is " +
                             Describe(dim) + "; dimensions must be non-negative integers");
    }
    shape.push_back(static_cast<int64_t>(*d));
  }
  return shape;
}

StatusOr<std::pair<uint64_t, uint64_t>> ParseOffsetsField(const std::string& ctx,
                                                          const json& entry) {
  const auto it = entry.find("data_offsets");
  if (it == entry.end() || !it->is_array() || it->size() != 2) {
    return InvalidArgument(ctx + ": field 'data_offsets' is missing or not an array of 2");
  }
  const std::optional<uint64_t> begin = AsNonNegativeInt((*it)[0]);
  const std::optional<uint64_t> end = AsNonNegativeInt((*it)[1]);
  if (!begin || !end) {
    return InvalidArgument(ctx + ": field 'data_offsets' is " + it->dump() +
                           "; offsets must be non-negative integers");
  }
  if (*begin > *end) {
    return InvalidArgument(ctx + ": field 'data_offsets' " + it->dump() + " has begin > end");
  }
  return std::make_pair(*begin, *end);
}

// numel(shape) * DTypeSize(dtype), guarding every multiplication against overflow.
StatusOr<uint64_t> ExpectedBytes(const std::string& ctx, DType dtype,
                                 const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) ||
        n > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgument(ctx + ": shape " + ShapeToString(shape) +
                             " has too many elements (overflows 64 bits)");
    }
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<uint64_t>(DTypeSize(dtype)), &bytes)) {
    return InvalidArgument(ctx + ": shape " + ShapeToString(shape) + " of " + DTypeName(dtype) +
                           " overflows 64 bits of bytes");
  }
  return bytes;
}

StatusOr<Entry> ParseEntry(const std::string& path, const std::string& name, const json& value,
                           uint64_t data_size) {
  const std::string ctx = path + ": tensor " + Quoted(name);
  if (!value.is_object()) return InvalidArgument(ctx + ": entry is " + Describe(value));
  Entry e;
  e.info.name = name;
  e.info.file = path;
  G4_ASSIGN_OR_RETURN(e.info.dtype, ParseDTypeField(ctx, value));
  G4_ASSIGN_OR_RETURN(e.info.shape, ParseShapeField(ctx, value));
  G4_ASSIGN_OR_RETURN(auto offsets, ParseOffsetsField(ctx, value));
  e.begin = offsets.first;
  e.end = offsets.second;
  if (e.end > data_size) {
    return DataLoss(ctx + ": byte range " + ByteRange(e.begin, e.end) +
                    " outside the data section of " + std::to_string(data_size) +
                    " bytes (truncated file?)");
  }
  G4_ASSIGN_OR_RETURN(uint64_t expected, ExpectedBytes(ctx, e.info.dtype, e.info.shape));
  const uint64_t found = e.end - e.begin;
  if (found != expected) {
    return InvalidArgument(ctx + ": dtype " + DTypeName(e.info.dtype) + " with shape " +
                           ShapeToString(e.info.shape) + " needs " + std::to_string(expected) +
                           " bytes but data_offsets " + ByteRange(e.begin, e.end) + " hold " +
                           std::to_string(found) + " bytes");
  }
  e.info.nbytes = static_cast<size_t>(found);
  return e;
}

// Sorts entries by offset and rejects any two non-empty byte ranges that share a byte.
Status SortAndCheckOverlap(const std::string& path, std::vector<Entry>* entries) {
  std::sort(entries->begin(), entries->end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.info.name) < std::tie(b.begin, b.end, b.info.name);
  });
  const Entry* furthest = nullptr;  // the non-empty entry reaching furthest so far
  for (const Entry& e : *entries) {
    if (e.begin == e.end) continue;  // an empty tensor occupies no bytes
    if (furthest != nullptr && e.begin < furthest->end) {
      return InvalidArgument(path + ": tensors " + Quoted(furthest->info.name) + " " +
                             ByteRange(furthest->begin, furthest->end) + " and " +
                             Quoted(e.info.name) + " " + ByteRange(e.begin, e.end) +
                             " overlap");
    }
    if (furthest == nullptr || e.end > furthest->end) furthest = &e;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  G4_ASSIGN_OR_RETURN(Layout layout, ReadLayout(*mapped));
  G4_ASSIGN_OR_RETURN(json header, ParseHeader(path, layout.header));

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(std::move(mapped)));
  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      G4_RETURN_IF_ERROR(ParseMetadata(path, value, &file->metadata_));
      continue;
    }
    G4_ASSIGN_OR_RETURN(Entry e, ParseEntry(path, name, value, layout.data_size));
    entries.push_back(std::move(e));
  }
  G4_RETURN_IF_ERROR(SortAndCheckOverlap(path, &entries));

  file->tensors_.reserve(entries.size());
  for (Entry& e : entries) {
    // In range: end <= data_size was checked, and the data section ends with the mapping.
    e.info.data = layout.data + e.begin;
    file->index_.emplace(e.info.name, file->tensors_.size());
    file->tensors_.push_back(std::move(e.info));
  }
  return file;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace g4
