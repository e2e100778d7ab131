// MatMulQ8aPanels (matmul_q8a_gemm.h). The decode kernels (matmul_q8a.cc) give each int32 lane a
// part of one row's block, so every block of every (row, x row) pair costs a convert, a scale
// and an FMA beside its two vpdpbusd. Here 16 rows are repacked into a panel in which lane r is
// row r: dword k of a block's 64-byte line k holds values 4k .. 4k + 3 of each of the 16 rows,
// unsigned (Q8DotOffset). A block of 16 rows against one row of x is then 8 vpdpbusd with x's 4
// bytes broadcast, started at -offset * sum(x block), and one convert + scale + FMA for all 16
// rows. Tiles of 2 panels x 4 rows of x share each weight line and each broadcast of x; a panel
// (K = 6144: 216 KiB with its scales) is built once per call and stays in L2 while every row of
// x passes over it. Sums are exact in int32 per block; blocks add in f32, as in the decode path.

#include "kernels/cpu/matmul_q8a_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define G4_TARGET_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))

namespace g4::cpu {
namespace {

constexpr int64_t kPanelRows = 16;
constexpr int kTileX = 4;  // rows of x per tile

// 16 rows of w, blocks [0, blocks): u [blocks][8 lines][16 rows][4 bytes], d [blocks][16].
struct Panel {
  std::vector<uint8_t> u;
  std::vector<float> d;
};

// The dwords at `at` + offsets (the panel's rows), zero in the lanes outside m.
G4_TARGET_VNNI inline __m512i Gather(__mmask16 m, __m512i offsets, const uint8_t* at) {
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, at, 1);
}

// Rows [n0, n0 + rows) of w (rows <= 16; the others of the panel are zero). Line k of a block
// holds dword k of its values in natural order; lane r is row r, fetched by a gather over the
// rows: Q4_0 / Q5_0 dword m of qs gives lines m (low nibbles: values 4m ..) and m + 4 (high:
// 16 + 4m ..), Q5_0's fifth bits come from qh's bits 4m .. 4m + 3 (and 16 + ..), Q8_0's signed
// bytes are offset by 128.
G4_TARGET_VNNI void BuildPanel(const TensorView& w, int64_t n0, int64_t rows, Panel& p) {
  const QuantKind kind = w.quant.kind;
  const int64_t block_bytes = GgufBlockFormat(kind).bytes, blocks = w.dim(1) / 32;
  p.u.resize(static_cast<size_t>(blocks * 512));
  p.d.resize(static_cast<size_t>(blocks * kPanelRows));
  const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(w.quant.row_bytes)));
  const __m512i zero = _mm512_setzero_si512(), low4 = _mm512_set1_epi8(0x0f);
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + n0 * w.quant.row_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = base + b * block_bytes;
    uint8_t* out = p.u.data() + b * 512;
    _mm512_storeu_ps(p.d.data() + b * kPanelRows,
                     _mm512_cvtph_ps(_mm512_cvtepi32_epi16(Gather(m, offsets, block))));
    if (kind == QuantKind::kQ8_0) {
      for (int k = 0; k < 8; ++k) {
        const __m512i v = _mm512_xor_si512(Gather(m, offsets, block + 2 + 4 * k),
                                           _mm512_set1_epi8(static_cast<char>(0x80)));
        _mm512_storeu_si512(out + 64 * k, v);
      }
      continue;
    }
    const bool q5 = kind == QuantKind::kQ5_0;
    const __m512i qh = q5 ? Gather(m, offsets, block + 2) : zero;
    const uint8_t* qs = block + (q5 ? 6 : 2);
    for (int k = 0; k < 4; ++k) {
      const __m512i v = Gather(m, offsets, qs + 4 * k);
      __m512i lo = _mm512_and_si512(v, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi32(v, 4), low4);
      if (q5) {  // bit 4k + i of qh to bit 4 of byte i (and 16 + 4k + i for the high values)
        for (int half = 0; half < 2; ++half) {
          const __m512i t = _mm512_srli_epi32(qh, 16 * half + 4 * k);
          __m512i bits = _mm512_slli_epi32(_mm512_and_si512(t, _mm512_set1_epi32(1)), 4);
          bits = _mm512_or_si512(
              bits, _mm512_slli_epi32(_mm512_and_si512(t, _mm512_set1_epi32(2)), 11));
          bits = _mm512_or_si512(
              bits, _mm512_slli_epi32(_mm512_and_si512(t, _mm512_set1_epi32(4)), 18));
          bits = _mm512_or_si512(
              bits, _mm512_slli_epi32(_mm512_and_si512(t, _mm512_set1_epi32(8)), 25));
          (half == 0 ? lo : hi) = _mm512_or_si512(half == 0 ? lo : hi, bits);
        }
      }
      _mm512_storeu_si512(out + 64 * k, lo);
      _mm512_storeu_si512(out + 64 * (k + 4), hi);
    }
  }
}

// x quantized row by row: xq [T, K], dx and the start of each block's integer sum
// (-offset * sum xq) [T, blocks].
struct QuantRows {
  std::vector<int8_t> xq;
  std::vector<float> dx;
  std::vector<int32_t> start;
};

// kG panels x kX rows of x from row t0: y[t * N + n0 + 16 g + r] for the panels' rows (the last
// panel may hold fewer: `rows` of it are stored).
template <int kG, int kX>
G4_TARGET_VNNI void Tile(const Panel* const* panels, const QuantRows& x, int64_t K, int64_t t0,
                         int64_t N, int64_t n0, int64_t last_rows, float* y) {
  const int64_t blocks = K / 32;
  __m512 acc[kG][kX];
  for (int g = 0; g < kG; ++g) {
    for (int t = 0; t < kX; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const int8_t* xq = x.xq.data() + t0 * K;
  const float* dx = x.dx.data() + t0 * blocks;
  const int32_t* start = x.start.data() + t0 * blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i dot[kG][kX];
    for (int t = 0; t < kX; ++t) {
      const __m512i s = _mm512_set1_epi32(start[t * blocks + b]);
      for (int g = 0; g < kG; ++g) dot[g][t] = s;
    }
    for (int k = 0; k < 8; ++k) {
      __m512i wl[kG];
      for (int g = 0; g < kG; ++g) {
        wl[g] = _mm512_loadu_si512(panels[g]->u.data() + b * 512 + 64 * k);
      }
      for (int t = 0; t < kX; ++t) {
        int32_t four;
        std::memcpy(&four, xq + t * K + 32 * b + 4 * k, 4);
        const __m512i xb = _mm512_set1_epi32(four);
        for (int g = 0; g < kG; ++g) dot[g][t] = _mm512_dpbusd_epi32(dot[g][t], wl[g], xb);
      }
    }
    for (int g = 0; g < kG; ++g) {
      const __m512 dw = _mm512_loadu_ps(panels[g]->d.data() + b * kPanelRows);
      for (int t = 0; t < kX; ++t) {
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx[t * blocks + b]));
        acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[g][t]), scale, acc[g][t]);
      }
    }
  }
  for (int g = 0; g < kG; ++g) {
    const int64_t rows = g == kG - 1 ? last_rows : kPanelRows;
    const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
    for (int t = 0; t < kX; ++t) {
      _mm512_mask_storeu_ps(y + (t0 + t) * N + n0 + kPanelRows * g, m, acc[g][t]);
    }
  }
}

template <int kG>
void TileRowsOfX(const Panel* const* panels, const QuantRows& x, int64_t K, int64_t t0,
                 int64_t count, int64_t N, int64_t n0, int64_t last_rows, float* y) {
  switch (count) {
    case 1: return Tile<kG, 1>(panels, x, K, t0, N, n0, last_rows, y);
    case 2: return Tile<kG, 2>(panels, x, K, t0, N, n0, last_rows, y);
    case 3: return Tile<kG, 3>(panels, x, K, t0, N, n0, last_rows, y);
    default: return Tile<kG, kTileX>(panels, x, K, t0, N, n0, last_rows, y);
  }
}

}  // namespace

void MatMulQ8aPanels(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1), blocks = K / 32;
  const int32_t offset = Q8DotOffset(w.quant.kind);
  thread_local QuantRows caller_rows;
  QuantRows& q = caller_rows;  // named through a reference: the workers read the caller's
  q.xq.resize(static_cast<size_t>(T * K));
  q.dx.resize(static_cast<size_t>(T * blocks));
  q.start.resize(static_cast<size_t>(T * blocks));
  pool.ParallelFor(T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int32_t* s = q.start.data() + t * blocks;
      QuantizeQ8Blocks(x + t * K, K, q.xq.data() + t * K, q.dx.data() + t * blocks, s);
      for (int64_t i = 0; i < blocks; ++i) s[i] *= -offset;
    }
  });
  // Work in pairs of panels (32 rows); the last pair may be one panel and a short one.
  const int64_t pairs = (N + 2 * kPanelRows - 1) / (2 * kPanelRows);
  pool.ParallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
    thread_local Panel panel[2];
    for (int64_t pr = begin; pr < end; ++pr) {
      const int64_t n0 = pr * 2 * kPanelRows;
      const int64_t rows = std::min(N - n0, 2 * kPanelRows);
      const int G = rows > kPanelRows ? 2 : 1;
      BuildPanel(w, n0, std::min(rows, kPanelRows), panel[0]);
      if (G == 2) BuildPanel(w, n0 + kPanelRows, rows - kPanelRows, panel[1]);
      const Panel* panels[2] = {&panel[0], &panel[1]};
      const int64_t last_rows = rows - (G - 1) * kPanelRows;
      for (int64_t t0 = 0; t0 < T; t0 += kTileX) {
        const int64_t count = std::min<int64_t>(kTileX, T - t0);
        if (G == 2) {
          TileRowsOfX<2>(panels, q, K, t0, count, N, n0, last_rows, y);
        } else {
          TileRowsOfX<1>(panels, q, K, t0, count, N, n0, last_rows, y);
        }
      }
    }
  });
}

}  // namespace g4::cpu

#else  // not x86: the caller never chooses the vnni512 path

namespace g4::cpu {
void MatMulQ8aPanels(ThreadPool&, const TensorView&, const float*, int64_t, float*) {}
}  // namespace g4::cpu

#endif
