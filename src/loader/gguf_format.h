// GGUF format constants (../shared/spec/formats.md §2.1-2.2), shared by the reader
// (loader/gguf.h) and the writer: the magic, accepted versions, key/value type ids and the
// ggml tensor type ids with what g4 stores each as.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace g4::gguf {

// "GGUF" read as a little-endian u32.
inline constexpr uint32_t kMagic = 0x46554747u;
// v1 used u32 counts and is rejected; v2 and v3 share the layout g4 reads.
inline constexpr uint32_t kMinVersion = 2;
inline constexpr uint32_t kMaxVersion = 3;
inline constexpr uint32_t kWriteVersion = 3;
// Used when `general.alignment` is absent.
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr const char* kAlignmentKey = "general.alignment";
inline constexpr const char* kArchitectureKey = "general.architecture";
// ggml's GGML_MAX_DIMS.
inline constexpr uint32_t kMaxDims = 4;

// Key/value types (the u32 before each value, and an array's element type).
enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,  // 1 byte, 0 or 1
  kString = 8,  // u64 byte length + bytes, no NUL
  kArray = 9,   // u32 element type, u64 count, elements
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
inline constexpr uint32_t kMaxValueType = 12;

// "u8", "string", "array", ...; "?" for an unknown id.
inline const char* ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kU8: return "u8";
    case ValueType::kI8: return "i8";
    case ValueType::kU16: return "u16";
    case ValueType::kI16: return "i16";
    case ValueType::kU32: return "u32";
    case ValueType::kI32: return "i32";
    case ValueType::kF32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kU64: return "u64";
    case ValueType::kI64: return "i64";
    case ValueType::kF64: return "f64";
  }
  return "?";
}

// Bytes of a fixed-size scalar value; 0 for string and array.
inline uint64_t ValueTypeSize(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    default: return 0;
  }
}

// ggml tensor type ids (ggml.h enum ggml_type); ids not listed are retired or unknown.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// What a ggml type id is, and how g4 holds it.
struct GgmlTypeInfo {
  const char* name = nullptr;  // "F32", "Q4_0", ...; nullptr for an unknown id
  int64_t block_elems = 0;     // elements per block (1 for plain types)
  int64_t block_bytes = 0;     // bytes per block
  // Supported by g4: a plain float view of `dtype`, or a block-quantized view of `quant`.
  bool supported = false;
  DType dtype = DType::kU8;
  QuantKind quant = QuantKind::kNone;
};

// The table of formats.md §2.2 (+ the block sizes of the types g4 names but does not run, so
// a file holding them still validates and fails with Unimplemented naming the tensor).
inline GgmlTypeInfo GgmlTypeLookup(uint32_t id) {
  using Q = QuantKind;
  auto plain = [](const char* n, int64_t bytes, DType d) {
    return GgmlTypeInfo{n, 1, bytes, true, d, Q::kNone};
  };
  auto block = [](const char* n, Q q) {
    const BlockFormat f = GgufBlockFormat(q);
    return GgmlTypeInfo{n, f.elems, f.bytes, true, DType::kU8, q};
  };
  auto unsupported = [](const char* n, int64_t elems, int64_t bytes) {
    return GgmlTypeInfo{n, elems, bytes, false, DType::kU8, Q::kNone};
  };
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::kF32: return plain("F32", 4, DType::kF32);
    case GgmlType::kF16: return plain("F16", 2, DType::kF16);
    case GgmlType::kBF16: return plain("BF16", 2, DType::kBF16);
    case GgmlType::kQ4_0: return block("Q4_0", Q::kQ4_0);
    case GgmlType::kQ4_1: return block("Q4_1", Q::kQ4_1);
    case GgmlType::kQ5_0: return block("Q5_0", Q::kQ5_0);
    case GgmlType::kQ5_1: return block("Q5_1", Q::kQ5_1);
    case GgmlType::kQ8_0: return block("Q8_0", Q::kQ8_0);
    case GgmlType::kQ4_K: return block("Q4_K", Q::kQ4_K);
    case GgmlType::kQ5_K: return block("Q5_K", Q::kQ5_K);
    case GgmlType::kQ6_K: return block("Q6_K", Q::kQ6_K);
    case GgmlType::kQ8_1: return unsupported("Q8_1", 32, 36);
    case GgmlType::kQ2_K: return unsupported("Q2_K", 256, 84);
    case GgmlType::kQ3_K: return unsupported("Q3_K", 256, 110);
    case GgmlType::kQ8_K: return unsupported("Q8_K", 256, 292);
    case GgmlType::kIQ2_XXS: return unsupported("IQ2_XXS", 256, 66);
    case GgmlType::kIQ2_XS: return unsupported("IQ2_XS", 256, 74);
    case GgmlType::kIQ3_XXS: return unsupported("IQ3_XXS", 256, 98);
    case GgmlType::kIQ1_S: return unsupported("IQ1_S", 256, 50);
    case GgmlType::kIQ4_NL: return unsupported("IQ4_NL", 32, 18);
    case GgmlType::kIQ3_S: return unsupported("IQ3_S", 256, 110);
    case GgmlType::kIQ2_S: return unsupported("IQ2_S", 256, 82);
    case GgmlType::kIQ4_XS: return unsupported("IQ4_XS", 256, 136);
    case GgmlType::kI8: return unsupported("I8", 1, 1);
    case GgmlType::kI16: return unsupported("I16", 1, 2);
    case GgmlType::kI32: return unsupported("I32", 1, 4);
    case GgmlType::kI64: return unsupported("I64", 1, 8);
    case GgmlType::kF64: return unsupported("F64", 1, 8);
    case GgmlType::kIQ1_M: return unsupported("IQ1_M", 256, 56);
    case GgmlType::kTQ1_0: return unsupported("TQ1_0", 256, 54);
    case GgmlType::kTQ2_0: return unsupported("TQ2_0", 256, 66);
    case GgmlType::kMXFP4: return unsupported("MXFP4", 32, 17);
  }
  return {};
}

// The ggml type id g4 writes for a plain dtype or a block kind; nullopt-like -1 if none.
inline int64_t GgmlTypeFor(DType dtype, QuantKind quant) {
  switch (quant) {
    case QuantKind::kQ4_0: return 2;
    case QuantKind::kQ4_1: return 3;
    case QuantKind::kQ5_0: return 6;
    case QuantKind::kQ5_1: return 7;
    case QuantKind::kQ8_0: return 8;
    case QuantKind::kQ4_K: return 12;
    case QuantKind::kQ5_K: return 13;
    case QuantKind::kQ6_K: return 14;
    case QuantKind::kNone: break;
    default: return -1;
  }
  switch (dtype) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kBF16: return 30;
    default: return -1;
  }
}

}  // namespace g4::gguf
