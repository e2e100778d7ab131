// A non-owning, read-only view of a tensor: pointer, dtype and shape (row-major, PyTorch
// dimension order). Weights are views into the memory-mapped checkpoint; they are never copied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace g4 {

struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;

  bool empty() const { return data == nullptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype); }
  float at(int64_t i) const { return LoadAsF32(data, dtype, i); }
};

// "[2048, 1536]"
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace g4
