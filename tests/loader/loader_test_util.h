// Helpers shared by the loader tests: a scoped temporary directory and builders for raw
// (possibly corrupt) safetensors files.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/temp_path.h"
#include "loader/safetensors_writer.h"

namespace g4::loader_test {

using ScopedTempDir = g4::testing::ScopedTempDir;  // tests/common/temp_path.h

inline void WriteFile(const std::string& path, std::string_view bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size()) << path;
  ASSERT_EQ(std::fclose(f), 0) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

inline std::string U64Le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

// Raw safetensors bytes: length field (the header's size unless given), header, data.
inline std::string RawSafetensors(const std::string& header, std::string_view data) {
  return U64Le(header.size()) + header + std::string(data);
}

// A tensor to write with WriteSafetensors and its raw bytes.
struct TestTensor {
  TensorSpec spec;
  std::string bytes;
};

// Writes `tensors` with the streaming writer, feeding each tensor in two pieces so fills
// that call Write() more than once are covered.
inline TensorFill FillFrom(const std::vector<TestTensor>& tensors) {
  return [&tensors](size_t i, ByteSink& sink) -> Status {
    const std::string& b = tensors[i].bytes;
    const size_t half = b.size() / 2;
    G4_RETURN_IF_ERROR(sink.Write(b.data(), half));
    return sink.Write(b.data() + half, b.size() - half);
  };
}

inline std::vector<TensorSpec> SpecsOf(const std::vector<TestTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const TestTensor& t : tensors) specs.push_back(t.spec);
  return specs;
}

// `n` bytes of a pattern that differs per `seed`, so swapped tensors are caught.
inline std::string PatternBytes(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed * 7 + 1) & 0xff);
  return s;
}

}  // namespace g4::loader_test
