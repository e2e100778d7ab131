// Helpers for the kernel tests (tests/kernels/*_test.cc): seeded random data, tensors stored in
// F32/BF16/F16 (optionally at a misaligned address), and the float dtypes to iterate over. The
// CPU kernels are compared against their g4::ref twins on exactly the same stored values, so any
// difference comes from the kernel, never from the inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"

namespace g4::testing {

inline constexpr DType kFloatDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
// A norm's weight cases: none, then each float dtype.
inline const std::optional<DType> kNormWeights[] = {std::nullopt, DType::kF32, DType::kBF16,
                                                    DType::kF16};

// One element of a parameterized test's name: a dtype or quantization kind by its name, a norm
// weight ("NoWeight" when none), a pool size ("threads3"), a SIMD target as is.
inline std::string ParamPart(DType t) { return DTypeName(t); }
inline std::string ParamPart(QuantKind k) { return QuantKindName(k); }
inline std::string ParamPart(const std::optional<DType>& w) {
  return w ? DTypeName(*w) : "NoWeight";
}
inline std::string ParamPart(int threads) { return "threads" + std::to_string(threads); }
inline std::string ParamPart(const std::string& target) { return target; }

// The name generator of the suites parameterized by a tuple of the above: its parts joined by
// '_' ("BF16_threads3_AVX2").
struct ParamNames {
  template <class... A>
  std::string operator()(const ::testing::TestParamInfo<std::tuple<A...>>& info) const {
    std::string name;
    auto add = [&](const auto& part) { name += (name.empty() ? "" : "_") + ParamPart(part); };
    std::apply([&](const auto&... parts) { (add(parts), ...); }, info.param);
    return name;
  }
};

// max over i of |y - ref| / (|ref| + floor): relative error, with `floor` so values near 0 are
// judged on an absolute scale (floor 0: where ref is 0 only an exact 0 passes). NaN anywhere, or
// a size mismatch, gives infinity.
inline double MaxScaledError(const std::vector<float>& y, const std::vector<float>& ref,
                             double floor) {
  if (y.size() != ref.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == ref[i]) continue;  // also equal infinities
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
    const double e = err / (std::fabs(ref[i]) + floor);
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

// sum_k |x[t, k] * w[n, k]| for every (t, n), w as ref reads it (dequantized): the scale of the
// rounding error of a matmul's y[t, n]. x: [T, K]; returns [T, N].
inline std::vector<double> MatMulAbsScale(const TensorView& w, const float* x, int64_t T) {
  const int64_t N = w.dim(0), K = w.dim(1);
  std::vector<double> s(static_cast<size_t>(T * N), 0.0);
  std::vector<double> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) row[k] = std::fabs(static_cast<double>(w.at(n * K + k)));
    for (int64_t t = 0; t < T; ++t) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += std::fabs(static_cast<double>(x[t * K + k])) * row[k];
      s[t * N + n] = acc;
    }
  }
  return s;
}

// max over i of |y[i] - ref[i]| / scale[i] (a zero scale, a row of zero products, lets only an
// exact result pass); NaN anywhere, or a size mismatch, gives infinity.
inline double MaxErrorOverScale(const std::vector<float>& y, const std::vector<float>& ref,
                                const std::vector<double>& scale) {
  if (y.size() != ref.size() || y.size() != scale.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
    const double e = scale[i] > 0 ? err / scale[i] : (err > 0 ? INFINITY : 0.0);
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

// A matmul's error on the scale of its terms: max over outputs of |y - ref| / sum_k |x w|.
inline double MatMulError(const TensorView& w, const std::vector<float>& x, int64_t T,
                          const std::vector<float>& y, const std::vector<float>& ref) {
  return MaxErrorOverScale(y, ref, MatMulAbsScale(w, x.data(), T));
}

// n values uniform in [lo, hi), deterministic for a seed.
inline std::vector<float> RandomFloats(int64_t n, uint32_t seed, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

// f32 values at an address that is 4 bytes past a 16-byte boundary when `misalign` is set, so
// SIMD loads must be unaligned. The storage owns one spare float in front.
class FloatBuffer {
 public:
  FloatBuffer(const std::vector<float>& values, bool misalign)
      : storage_(values.size() + 1), offset_(misalign ? 1 : 0) {
    if (!values.empty()) std::memcpy(data(), values.data(), values.size() * sizeof(float));
  }
  explicit FloatBuffer(int64_t n, bool misalign = false)
      : FloatBuffer(std::vector<float>(static_cast<size_t>(n), 0.0f), misalign) {}
  float* data() { return storage_.data() + offset_; }
  const float* data() const { return storage_.data() + offset_; }
  std::vector<float> ToVector(int64_t n) const { return std::vector<float>(data(), data() + n); }

 private:
  std::vector<float> storage_;
  size_t offset_;
};

// A tensor of `shape` stored as `dtype` (values rounded to it, ties to even), one element past
// the start of its storage when `misalign` is set (2 bytes for the 16-bit dtypes, 4 for F32).
class StoredTensor {
 public:
  StoredTensor(const std::vector<float>& values, DType dtype, std::vector<int64_t> shape,
               bool misalign)
      : bytes_((values.size() + 1) * DTypeSize(dtype) + 16) {
    // vector<uint8_t> storage comes from operator new (16-byte aligned); skip one element.
    const size_t esize = DTypeSize(dtype);
    uint8_t* base = bytes_.data() + (misalign ? esize : 0);
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::kF32) {
        std::memcpy(base + i * 4, &values[i], 4);
      } else {
        const uint16_t bits = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
        std::memcpy(base + i * 2, &bits, 2);
      }
    }
    view_.data = base;
    view_.dtype = dtype;
    view_.shape = std::move(shape);
  }
  // Moving keeps the vector's buffer, so view_.data stays valid; a copy would not.
  StoredTensor(StoredTensor&&) = default;
  StoredTensor(const StoredTensor&) = delete;
  StoredTensor& operator=(const StoredTensor&) = delete;

  const TensorView& view() const { return view_; }

 private:
  std::vector<uint8_t> bytes_;
  TensorView view_;
};

// max over rows of D of max_d |y - ref| / max_d max(|ref|, |floor| * floor_scale): an error on
// the row's scale (elements of a row that cancel to ~0 are judged against its largest), never
// below the scale of `floor` when given (the addends of a sum that may cancel). NaN: infinity.
inline double MaxRowError(const std::vector<float>& y, const std::vector<float>& ref, int64_t D,
                          const std::vector<float>& floor = {}, float floor_scale = 1.0f) {
  double worst = 0.0;
  for (size_t r0 = 0; r0 < ref.size(); r0 += static_cast<size_t>(D)) {
    double scale = 0.0, err = 0.0;
    for (size_t i = r0; i < r0 + static_cast<size_t>(D); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
      if (!floor.empty()) scale = std::max(scale, std::fabs(double{floor[i]} * floor_scale));
      const double e = std::fabs(static_cast<double>(y[i]) - ref[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    worst = std::max(worst, scale > 0 ? err / scale : err);
  }
  return worst;
}

// RoPE frequencies theta^(-2j/D) for the first `rotated` of D/2 pairs, 0 after (proportional
// RoPE's pass-through).
inline std::vector<float> InvFreq(int64_t D, double theta, int64_t rotated) {
  std::vector<float> f(static_cast<size_t>(D / 2), 0.0f);
  for (int64_t j = 0; j < rotated && j < D / 2; ++j) {
    f[static_cast<size_t>(j)] = static_cast<float>(std::pow(theta, -2.0 * j / D));
  }
  return f;
}

// Every SIMD target compiled in and supported here, best first: the parameterized tests run
// each case once per target, so the AVX2/SSE4/scalar paths are checked on an AVX-512 machine.
inline std::vector<std::string> Targets() { return cpu::AvailableTargets(); }

// Restricts CPU kernel dispatch to one target for a scope (a test body).
class ScopedTarget {
 public:
  explicit ScopedTarget(const std::string& name) : ok_(cpu::SetTargetForTesting(name)) {}
  ~ScopedTarget() { (void)cpu::SetTargetForTesting(""); }
  ScopedTarget(const ScopedTarget&) = delete;
  ScopedTarget& operator=(const ScopedTarget&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

}  // namespace g4::testing
