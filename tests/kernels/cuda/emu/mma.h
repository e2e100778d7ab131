#pragma once
// The part of CUDA's WMMA API (nvcuda::wmma, 16 x 16 x 16 tiles) the GEMM kernels use, for the
// CPU emulation. A real fragment spreads its tile over the warp's lanes in a layout the API does
// not expose; here every lane holds the whole tile (as f32: every f16 / bf16 value is exact in
// f32), so code that uses fragments only through the API computes the same thing, lane by lane.
// mma_sync multiplies exactly (a 16-bit product is exact in f32) and accumulates in f32 in k
// order; a tensor core's summation order and rounding inside one mma differ, which tests absorb
// in their tolerance. Lanes 0..15 compute one row each of the product and every lane copies the
// whole (the warp's fragments are the same tile in every lane, which the loads check), so the
// emulation costs one product per warp, not 32. Checked as the API documents, aborting with a
// message otherwise: every lane of the warp takes part (each call is a __syncwarp) with the same
// pointer and ldm, the pointer is 32-byte aligned, ldm is a multiple of 16 bytes, and bf16
// fragments need cc >= 8.0 (f16: 7.0).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulation knows 16 x 16 x 16 only");
  static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = kRows * kCols;
  float x[num_elements];  // row-major (row, col) of the tile
  float at(int r, int c) const { return x[r * kCols + c]; }
};

namespace detail {

[[noreturn]] inline void Die(const char* what) {
  std::fprintf(stderr, "[cuda emu] wmma: %s\n", what);
  std::abort();
}

template <typename T>
float Widen(const T& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>);
    return __uint_as_float(static_cast<uint32_t>(v.b) << 16);
  }
}

template <typename T>
void CheckType() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) Die("no device");
  const int cc = 10 * p.major + p.minor;
  if (std::is_same_v<T, __nv_bfloat16> && cc < 80) Die("bf16 fragments need cc >= 8.0");
  if (cc < 70) Die("tensor cores need cc >= 7.0");
}

// Per warp: the lanes' (pointer, ldm) of the access in progress, and the product being shared.
inline const void* g_ptr[32][32];
inline unsigned g_ldm[32][32];
inline float g_product[32][256];

// Checks the access's alignment, then (after a __syncwarp: every lane has arrived) that every
// lane of the warp passed the same pointer and ldm.
template <typename T>
void CheckAccess(const void* p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0) Die("pointer not 32-byte aligned");
  if ((ldm * sizeof(T)) % 16 != 0) Die("ldm not a multiple of 16 bytes");
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  g_ptr[warp][lane] = p;
  g_ldm[warp][lane] = ldm;
  __syncwarp();
  for (unsigned l = 0; l < 32; ++l) {
    if (g_ptr[warp][l] != p || g_ldm[warp][l] != ldm) Die("lanes of a warp differ in ptr / ldm");
  }
  __syncwarp();  // the slots are free for the next access
}

}  // namespace detail

// a (matrix_a, matrix_b): element (r, c) at p[r * ldm + c] for row_major, p[c * ldm + r] for
// col_major.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>);
  detail::CheckType<T>();
  detail::CheckAccess<T>(p, ldm);
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::kRows; ++r) {
    for (int c = 0; c < F::kCols; ++c) {
      const T& v = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
      f.x[r * F::kCols + c] = detail::Widen(v);
    }
  }
}

template <int M, int N, int K>
void fill_fragment(fragment<accumulator, M, N, K, float>& f, float v) {
  for (float& e : f.x) e = v;
}

// d = a b + c.
template <int M, int N, int K, typename T, typename LA, typename LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  detail::CheckType<T>();
  const unsigned warp = threadIdx.x / 32, i = threadIdx.x % 32;
  __syncwarp();  // the previous product has been copied by every lane
  if (i < M) {
    for (int j = 0; j < N; ++j) {
      float acc = c.at(i, j);
      for (int k = 0; k < K; ++k) acc += a.at(i, k) * b.at(k, j);
      detail::g_product[warp][i * N + j] = acc;
    }
  }
  __syncwarp();
  std::memcpy(d.x, detail::g_product[warp], sizeof(float) * M * N);
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                       layout_t layout) {
  detail::CheckAccess<float>(p, ldm);
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) {
      (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.at(r, c);
    }
  }
}

}  // namespace nvcuda::wmma
