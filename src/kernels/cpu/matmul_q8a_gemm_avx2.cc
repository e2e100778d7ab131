// MatMulQ8aPanelsAvx2 (matmul_q8a_gemm.h): T > 1 rows of x against Q4_K / Q6_K weights on AVX2,
// the kinds no panel is packed for at load there. The per-row kernels (matmul_q8a.cc) read
// each row once per row of x, with a scale convert and a horizontal sum per row and unit: on
// 2 AVX2 cores they ran the 270M's Q4_K / Q6_K prefill matmuls at half the speed of the f32
// panels of the exact path. As on AVX-512 (matmul_q8a_gemm.cc), 16 rows are unpacked once per
// call into a panel whose 32-bit lane r is row r (line k of a unit: values 4k .. 4k + 3 of each
// row, unsigned bytes), and tiles of 8 rows (half a panel) x 4 rows of x run vpmaddubsw on x's
// 4 bytes broadcast. The int16 pair sums are widened before they could pass int16: every unit
// of Q4_K (8 lines: 8 * 2 * 15 * 127 = 30480), every 2 lines of Q6_K (2 * 2 * 63 * 127 =
// 32004). The integer sums per unit are exact; units add in f32.

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/gguf_blocks.h"
#include "core/q8_blocks.h"
#include "kernels/cpu/matmul_q8a_gemm.h"
#include "kernels/cpu/q8a_units.h"
#include "kernels/cpu/q8a_x86.h"

namespace g4::cpu {

#if G4_Q8A_X86
namespace {

constexpr int64_t kPanelRows = kUnitPanelRows;
constexpr int kTileX = 4;  // rows of x per tile
using Panel = UnitPanel;

// One 256-value block of a row: its unsigned values in order (Q4_K: nibbles; Q6_K: 6 bits,
// before the offset of 32) and its units' scales and mins (core/q8_blocks.cc spells out the
// layouts).
void UnpackBlock(QuantKind kind, const uint8_t* rb, uint8_t* vals, float* scale, float* min) {
  if (kind == QuantKind::kQ4_K) {
    for (int i = 0; i < 8; ++i) {
      int sc, mn;
      GgufScaleMinK4(rb + 4, i, &sc, &mn);
      scale[i] = GgufHalf(rb) * static_cast<float>(sc);
      min[i] = GgufHalf(rb + 2) * static_cast<float>(mn);
      const uint8_t* qs = rb + 16 + 32 * (i / 2);
      for (int j = 0; j < 32; ++j) vals[32 * i + j] = (qs[j] >> (4 * (i % 2))) & 0x0f;
    }
    return;
  }
  const uint8_t *ql = rb, *qh = rb + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int lo = ql[64 * h + l], hi = ql[64 * h + 32 + l], bits = qh[32 * h + l];
      uint8_t* v = vals + 128 * h + l;
      v[0] = static_cast<uint8_t>((lo & 0x0f) | (bits & 3) << 4);
      v[32] = static_cast<uint8_t>((hi & 0x0f) | (bits >> 2 & 3) << 4);
      v[64] = static_cast<uint8_t>((lo >> 4) | (bits >> 4 & 3) << 4);
      v[96] = static_cast<uint8_t>((hi >> 4) | (bits >> 6 & 3) << 4);
    }
  }
  const float d = GgufHalf(rb + 208);
  for (int g = 0; g < 16; ++g) scale[g] = d * static_cast<float>(static_cast<int8_t>(rb[192 + g]));
}

// Rows [n0, n0 + rows) of w (rows <= 16; the others of the panel are zero).
void BuildPanel(const TensorView& w, const Units& un, int64_t n0, int64_t rows, Panel& p) {
  const int64_t blocks = w.dim(1) / 256, per = 256 / un.values, lines = un.values / 4;
  const int64_t block_bytes = GgufBlockFormat(w.quant.kind).bytes;
  const int64_t units = blocks * per;
  p.u.assign(static_cast<size_t>(units * lines * 64), 0);
  p.scale.assign(static_cast<size_t>(units * kPanelRows), 0.0f);
  p.min.assign(un.min ? static_cast<size_t>(units * kPanelRows) : 0, 0.0f);
  uint8_t vals[256];
  float scale[16], min[16];
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + (n0 + r) * w.quant.row_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      UnpackBlock(w.quant.kind, row + b * block_bytes, vals, scale, min);
      for (int64_t i = 0; i < per; ++i) {
        const int64_t unit = b * per + i;
        p.scale[static_cast<size_t>(unit * kPanelRows + r)] = scale[i];
        if (un.min) p.min[static_cast<size_t>(unit * kPanelRows + r)] = min[i];
        for (int64_t k = 0; k < lines; ++k) {
          std::memcpy(p.u.data() + (unit * lines + k) * 64 + 4 * r, vals + i * un.values + 4 * k,
                      4);
        }
      }
    }
  }
}

// Half h (rows 8h .. 8h + 7) of a panel against kX rows of x from t0: y[t * N + n0 + r] for
// the `rows` of them that exist.
template <int kX, int kLines, bool kMin>
G4_TARGET_AVX2 void Tile(const Panel& p, const QuantRows& x, int64_t K, int64_t t0, int h,
                         int64_t N, int64_t n0, int64_t rows, float* y) {
  constexpr int kWiden = kMin ? kLines : 2;  // Q4_K: the unit; Q6_K: 2 lines
  const int64_t units = K / (4 * kLines);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kX];
  for (int t = 0; t < kX; ++t) acc[t] = _mm256_setzero_ps();
  const int8_t* xq = x.xq.data() + t0 * K;
  for (int64_t u = 0; u < units; ++u) {
    __m256i d[kX], s[kX];
    for (int t = 0; t < kX; ++t) d[t] = _mm256_set1_epi32(x.start[(t0 + t) * units + u]);
    for (int k = 0; k < kLines; ++k) {
      if (k % kWiden == 0) {
        for (int t = 0; t < kX; ++t) s[t] = _mm256_setzero_si256();
      }
      const __m256i wl = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(p.u.data() + (u * kLines + k) * 64 + 32 * h));
      for (int t = 0; t < kX; ++t) {
        const __m256i xb = x86::Broadcast4Avx2(xq + t * K, u * 4 * kLines + 4 * k);
        s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(wl, xb));
      }
      if (k % kWiden == kWiden - 1) {
        for (int t = 0; t < kX; ++t) d[t] = _mm256_add_epi32(d[t], _mm256_madd_epi16(s[t], ones));
      }
    }
    const __m256 sc = _mm256_loadu_ps(p.scale.data() + u * kPanelRows + 8 * h);
    for (int t = 0; t < kX; ++t) {
      const __m256 dx = _mm256_set1_ps(x.dx[(t0 + t) * units + u]);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[t]), _mm256_mul_ps(sc, dx), acc[t]);
    }
    if constexpr (kMin) {
      const __m256 mn = _mm256_loadu_ps(p.min.data() + u * kPanelRows + 8 * h);
      for (int t = 0; t < kX; ++t) {
        acc[t] = _mm256_fnmadd_ps(mn, _mm256_set1_ps(x.dxs[(t0 + t) * units + u]), acc[t]);
      }
    }
  }
  for (int t = 0; t < kX; ++t) {
    float* out = y + (t0 + t) * N + n0;
    if (rows == 8) {
      _mm256_storeu_ps(out, acc[t]);
    } else {
      alignas(32) float full[8];
      _mm256_store_ps(full, acc[t]);
      std::copy_n(full, rows, out);
    }
  }
}

template <int kLines, bool kMin>
void Tiles(const Panel& p, const QuantRows& x, int64_t K, int64_t T, int h, int64_t N,
           int64_t n0, int64_t rows, float* y) {
  for (int64_t t0 = 0; t0 < T; t0 += kTileX) {
    switch (std::min<int64_t>(kTileX, T - t0)) {
      case 1: Tile<1, kLines, kMin>(p, x, K, t0, h, N, n0, rows, y); break;
      case 2: Tile<2, kLines, kMin>(p, x, K, t0, h, N, n0, rows, y); break;
      case 3: Tile<3, kLines, kMin>(p, x, K, t0, h, N, n0, rows, y); break;
      default: Tile<kTileX, kLines, kMin>(p, x, K, t0, h, N, n0, rows, y); break;
    }
  }
}

}  // namespace

void MatMulQ8aPanelsAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                         float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const Units un = UnitsOf(w.quant.kind);
  thread_local QuantRows caller_rows;
  QuantRows& q = caller_rows;  // named through a reference: the workers read the caller's
  QuantizeUnitRows(pool, un, x, T, K, q);
  const int64_t panels = (N + kPanelRows - 1) / kPanelRows;
  pool.ParallelFor(panels, 1, [&](int64_t begin, int64_t end) {
    thread_local Panel panel;
    for (int64_t pn = begin; pn < end; ++pn) {
      const int64_t n0 = pn * kPanelRows, rows = std::min(N - n0, kPanelRows);
      BuildPanel(w, un, n0, rows, panel);
      for (int h = 0; h * 8 < rows; ++h) {
        const int64_t n = n0 + 8 * h, r = std::min<int64_t>(8, rows - 8 * h);
        if (un.min) {
          Tiles<8, true>(panel, q, K, T, h, N, n, r, y);
        } else {
          Tiles<4, false>(panel, q, K, T, h, N, n, r, y);
        }
      }
    }
  });
}

#else  // not x86: the caller never chooses the avx2 path

void MatMulQ8aPanelsAvx2(ThreadPool&, const TensorView&, const float*, int64_t, float*) {}

#endif

}  // namespace g4::cpu
