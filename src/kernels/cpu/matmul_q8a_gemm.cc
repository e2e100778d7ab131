// MatMulQ8aPanels (matmul_q8a_gemm.h). The decode kernels (matmul_q8a.cc) give each int32 lane a
// part of one row's block, so every block of every (row, x row) pair costs a convert, a scale
// and an FMA beside its two vpdpbusd. Here 16 rows are repacked into a panel in which lane r is
// row r. A unit is the run of values under one scale: a block of 32 (Q4_0, Q5_0, Q8_0), a
// sub-block of 32 (Q4_K, whose min term is one more FMA) or a group of 16 (Q6_K). Line k of a
// unit holds values 4k .. 4k + 3 of each of the 16 rows as unsigned bytes (Q8DotOffset), so a
// unit of 16 rows against one row of x is 8 (Q6_K: 4) vpdpbusd with x's 4 bytes broadcast,
// started at -offset * sum(x over the unit), and one convert + scale + FMA for all 16 rows.
// Tiles of 2 panels x 4 rows of x share each weight line and each broadcast of x; a panel
// (K = 6144, Q4_0: 216 KiB with its scales) is built once per call and stays in L2 while every
// row of x passes over it. Sums are exact in int32 per unit; units add in f32, as in the decode
// path.

#include "kernels/cpu/matmul_q8a_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/gguf_blocks.h"
#include "core/q8_blocks.h"
#include "kernels/cpu/q8a_units.h"
#include "kernels/cpu/q8a_x86.h"

#if G4_Q8A_X86

namespace g4::cpu {
namespace {

constexpr int64_t kPanelRows = kUnitPanelRows;
constexpr int kTileX = 4;  // rows of x per tile
using Panel = UnitPanel;

// The dwords at `at` + offsets (the panel's rows), zero in the lanes outside m.
G4_TARGET_VNNI inline __m512i Gather(__mmask16 m, __m512i offsets, const uint8_t* at) {
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, at, 1);
}

// Bytes of v (as 32-bit lanes) shifted right by `shift` bits, masked to `mask` per byte.
G4_TARGET_VNNI inline __m512i Field(__m512i v, int shift, int mask) {
  const __m512i bytes = _mm512_set1_epi8(static_cast<char>(mask));
  return _mm512_and_si512(_mm512_srl_epi32(v, _mm_cvtsi32_si128(shift)), bytes);
}

// Rows [n0, n0 + rows) of w (rows <= 16; the others of the panel are zero). Lane r is row r,
// fetched by a gather over the rows: Q4_0 / Q5_0 dword m of qs gives lines m (low nibbles:
// values 4m ..) and m + 4 (high: 16 + 4m ..), Q5_0's fifth bits come from qh's bits 4m .. 4m + 3
// (and 16 + ..), Q8_0's signed bytes are offset by 128; Q4_K sub-block i is the nibble i % 2 of
// qs[32 (i / 2) ..]; Q6_K group g (values 16 g ..) is value 128 h + 32 s + l with l from 16 (g % 2)
// (core/q8_blocks.cc's Q8Dot spells the layouts out).
G4_TARGET_VNNI void BuildPanel(const TensorView& w, int64_t n0, int64_t rows, Panel& p) {
  const QuantKind kind = w.quant.kind;
  const BlockFormat f = GgufBlockFormat(kind);
  const Units un = UnitsOf(kind);
  const int64_t blocks = w.dim(1) / f.elems, per = f.elems / un.values, lines = un.values / 4;
  const int64_t units = blocks * per;
  p.u.resize(static_cast<size_t>(units * lines * 64));
  p.scale.assign(static_cast<size_t>(units * kPanelRows), 0.0f);
  if (un.min) p.min.assign(static_cast<size_t>(units * kPanelRows), 0.0f);
  const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(w.quant.row_bytes)));
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + n0 * w.quant.row_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = base + b * f.bytes;
    uint8_t* out = p.u.data() + b * per * lines * 64;
    float* scale = p.scale.data() + b * per * kPanelRows;
    if (kind == QuantKind::kQ4_K || kind == QuantKind::kQ6_K) {
      for (int64_t r = 0; r < rows; ++r) {  // scales: a few per row and block
        const uint8_t* rb = block + r * w.quant.row_bytes;
        for (int64_t i = 0; i < per; ++i) {
          if (kind == QuantKind::kQ6_K) {
            scale[i * kPanelRows + r] = GgufHalf(rb + 208) * static_cast<int8_t>(rb[192 + i]);
            continue;
          }
          int sc, mn;
          GgufScaleMinK4(rb + 4, static_cast<int>(i), &sc, &mn);
          scale[i * kPanelRows + r] = GgufHalf(rb) * static_cast<float>(sc);
          p.min[static_cast<size_t>((b * per + i) * kPanelRows + r)] =
              GgufHalf(rb + 2) * static_cast<float>(mn);
        }
      }
      for (int64_t i = 0; i < per; ++i) {
        for (int k = 0; k < lines; ++k) {
          __m512i v;
          if (kind == QuantKind::kQ4_K) {
            v = Field(Gather(m, offsets, block + 16 + 32 * (i / 2) + 4 * k), 4 * (i % 2), 0x0f);
          } else {
            const int64_t h = i / 8, s = i % 8 / 2, l = 16 * (i % 2) + 4 * k;
            const __m512i nib =
                Field(Gather(m, offsets, block + 64 * h + 32 * (s % 2) + l), 4 * (s / 2), 0x0f);
            const __m512i hi = Field(Gather(m, offsets, block + 128 + 32 * h + l), 2 * s, 0x03);
            v = _mm512_or_si512(nib, _mm512_slli_epi32(hi, 4));
          }
          _mm512_storeu_si512(out + (i * lines + k) * 64, v);
        }
      }
      continue;
    }
    _mm512_storeu_ps(scale, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(Gather(m, offsets, block))));
    if (kind == QuantKind::kQ8_0) {
      for (int k = 0; k < 8; ++k) {
        const __m512i v = _mm512_xor_si512(Gather(m, offsets, block + 2 + 4 * k),
                                           _mm512_set1_epi8(static_cast<char>(0x80)));
        _mm512_storeu_si512(out + 64 * k, v);
      }
      continue;
    }
    const bool q5 = kind == QuantKind::kQ5_0;
    const __m512i qh = q5 ? Gather(m, offsets, block + 2) : _mm512_setzero_si512();
    const uint8_t* qs = block + (q5 ? 6 : 2);
    for (int k = 0; k < 4; ++k) {
      const __m512i v = Gather(m, offsets, qs + 4 * k);
      __m512i lo = Field(v, 0, 0x0f), hi = Field(v, 4, 0x0f);
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

// kG panels x kX rows of x from row t0: y[t * N + n0 + 16 g + r] for the panels' rows (the last
// panel may hold fewer: `last_rows` of it are stored).
template <int kG, int kX, int kLines, bool kMin>
G4_TARGET_VNNI void Tile(const Panel* const* panels, const QuantRows& x, int64_t K, int64_t t0,
                         int64_t N, int64_t n0, int64_t last_rows, float* y) {
  const int64_t units = K / (4 * kLines);
  __m512 acc[kG][kX];
  for (int g = 0; g < kG; ++g) {
    for (int t = 0; t < kX; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const int8_t* xq = x.xq.data() + t0 * K;
  const int32_t* start = x.start.data() + t0 * units;
  const float* dx = x.dx.data() + t0 * units;
  const float* dxs = kMin ? x.dxs.data() + t0 * units : nullptr;
  for (int64_t u = 0; u < units; ++u) {
    __m512i dot[kG][kX];
    for (int t = 0; t < kX; ++t) {
      const __m512i s = _mm512_set1_epi32(start[t * units + u]);
      for (int g = 0; g < kG; ++g) dot[g][t] = s;
    }
    for (int k = 0; k < kLines; ++k) {
      __m512i wl[kG];
      for (int g = 0; g < kG; ++g) {
        wl[g] = _mm512_loadu_si512(panels[g]->u.data() + (u * kLines + k) * 64);
      }
      for (int t = 0; t < kX; ++t) {
        int32_t four;
        std::memcpy(&four, xq + t * K + u * 4 * kLines + 4 * k, 4);
        const __m512i xb = _mm512_set1_epi32(four);
        for (int g = 0; g < kG; ++g) dot[g][t] = _mm512_dpbusd_epi32(dot[g][t], wl[g], xb);
      }
    }
    for (int g = 0; g < kG; ++g) {
      const __m512 sc = _mm512_loadu_ps(panels[g]->scale.data() + u * kPanelRows);
      for (int t = 0; t < kX; ++t) {
        const __m512 scale = _mm512_mul_ps(sc, _mm512_set1_ps(dx[t * units + u]));
        acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[g][t]), scale, acc[g][t]);
      }
      if constexpr (kMin) {
        const __m512 mn = _mm512_loadu_ps(panels[g]->min.data() + u * kPanelRows);
        for (int t = 0; t < kX; ++t) {
          acc[g][t] = _mm512_fnmadd_ps(mn, _mm512_set1_ps(dxs[t * units + u]), acc[g][t]);
        }
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

template <int kG, int kLines, bool kMin>
void TileRowsOfX(const Panel* const* panels, const QuantRows& x, int64_t K, int64_t t0,
                 int64_t count, int64_t N, int64_t n0, int64_t last_rows, float* y) {
  switch (count) {
    case 1: return Tile<kG, 1, kLines, kMin>(panels, x, K, t0, N, n0, last_rows, y);
    case 2: return Tile<kG, 2, kLines, kMin>(panels, x, K, t0, N, n0, last_rows, y);
    case 3: return Tile<kG, 3, kLines, kMin>(panels, x, K, t0, N, n0, last_rows, y);
    default: return Tile<kG, kTileX, kLines, kMin>(panels, x, K, t0, N, n0, last_rows, y);
  }
}

template <int kG>
void TileOf(const Units& un, const Panel* const* panels, const QuantRows& x, int64_t K,
            int64_t t0, int64_t count, int64_t N, int64_t n0, int64_t last_rows, float* y) {
  if (un.values == 16) {
    return TileRowsOfX<kG, 4, false>(panels, x, K, t0, count, N, n0, last_rows, y);
  }
  if (un.min) return TileRowsOfX<kG, 8, true>(panels, x, K, t0, count, N, n0, last_rows, y);
  TileRowsOfX<kG, 8, false>(panels, x, K, t0, count, N, n0, last_rows, y);
}

}  // namespace

void MatMulQ8aPanels(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const Units un = UnitsOf(w.quant.kind);
  thread_local QuantRows caller_rows;
  QuantRows& q = caller_rows;  // named through a reference: the workers read the caller's
  QuantizeUnitRows(pool, un, x, T, K, q);
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
          TileOf<2>(un, panels, q, K, t0, count, N, n0, last_rows, y);
        } else {
          TileOf<1>(un, panels, q, K, t0, count, N, n0, last_rows, y);
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
