// Q6_K in 16-row panels (matmul_q8a_packed_q6k.h). A Q6_K block of a row is 256 6-bit values u
// (../shared/spec/formats.md §2.3, ggml's dequantize_row_q6_K): for half h and l < 32,
//   u[128h + l]      = ql[64h + l] low nibble       | qh[32h + l] bits 0-1 << 4
//   u[128h + 32 + l] = ql[64h + 32 + l] low nibble  | qh bits 2-3 << 4
//   u[128h + 64 + l] = ql[64h + l] high nibble      | qh bits 4-5 << 4
//   u[128h + 96 + l] = ql[64h + 32 + l] high nibble | qh bits 6-7 << 4
// and value = d * sc[g] * (u - 32) in 16 groups g of 16 values. A panel block keeps those bytes
// as they are, regrouped so that int32 lane r of a 64-byte line is row r:
//   line 3 (8h + k) + 0: dword r = ql[64h + 4k .. 64h + 4k + 3] of row r   (k < 8)
//   line 3 (8h + k) + 1: dword r = ql[64h + 32 + 4k ..]
//   line 3 (8h + k) + 2: dword r = qh[32h + 4k ..]
// then the int8 scales [16 groups][16 rows], the 16 rows' f16 d, and 32 bytes of padding: 3392
// bytes for 16 x 210. Three lines give 4 x 4 values of each of the 16 rows; each group's integer
// sum starts at -32 * sum(xq over the group) and takes one convert + scale + FMA for 16 rows.

#include "kernels/cpu/matmul_q8a_packed_q6k.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/q8_blocks.h"
#include "kernels/cpu/q8_blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define G4_Q6P_X86 1
// GCC 12 reports its own _mm512_undefined_* placeholders as uninitialized (as in matmul_q8a.cc).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define G4_TARGET_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#else
#define G4_Q6P_X86 0
#endif

namespace g4::cpu {
namespace {

constexpr int64_t kRows = 16;
constexpr int64_t kBlockBytes = 3392;  // 48 lines, 256 scale bytes, 32 of d, 32 of padding
constexpr int64_t kScalesAt = 48 * 64, kDAt = kScalesAt + 256;

// x's rows quantized: xq [T, K], dx [T, K / 32], and the sums of xq over groups of 16
// (sx16 [T, K / 16]).
struct Q6X {
  std::vector<int8_t> xq;
  std::vector<float> dx;
  std::vector<int32_t> sx, sx16;
};

void QuantizeRows(ThreadPool& pool, const float* x, int64_t T, int64_t K, Q6X& q) {
  q.xq.resize(static_cast<size_t>(T * K));
  q.dx.resize(static_cast<size_t>(T * K / kQ8Block));
  q.sx.resize(static_cast<size_t>(T * K / kQ8Block));
  q.sx16.resize(static_cast<size_t>(T * K / 16));
  const auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int8_t* xq = q.xq.data() + t * K;
      cpu::QuantizeQ8Blocks(x + t * K, K, xq, q.dx.data() + t * K / kQ8Block,
                            q.sx.data() + t * K / kQ8Block);
      cpu::SumsOf16(xq, K, q.sx16.data() + t * K / 16);
    }
  };
  if (T == 1) return rows(0, 1);
  pool.ParallelFor(T, 1, rows);
}

#if G4_Q6P_X86
constexpr int64_t kAhead = 1024;  // bytes ahead of the block being read that it is prefetched

// The 6-bit values of part j (0-3: the four rows of the table above) of lines a (ql at 64h +
// 4k, j even; at 64h + 32 + 4k, j odd) and c (qh), as unsigned bytes.
G4_TARGET_VNNI inline __m512i Part(__m512i a, __m512i c, int j) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
  const __m512i nib = j < 2 ? _mm512_and_si512(a, low4)
                            : _mm512_and_si512(_mm512_srli_epi16(a, 4), low4);
  // qh bits 2j, 2j + 1 to bits 4-5 of each byte (16-bit shifts: the bits a byte takes from its
  // neighbour fall outside the mask).
  __m512i hi;
  switch (j) {
    case 0: hi = _mm512_slli_epi16(c, 4); break;
    case 1: hi = _mm512_slli_epi16(c, 2); break;
    case 2: hi = c; break;
    default: hi = _mm512_srli_epi16(c, 2); break;
  }
  return _mm512_or_si512(nib, _mm512_and_si512(hi, top2));
}

G4_TARGET_VNNI inline __m512i Broadcast4(const int8_t* xq, int64_t i) {
  int32_t four;
  std::memcpy(&four, xq + i, 4);
  return _mm512_set1_epi32(four);
}

// Lane r: d of row r times its int8 scale of group g, from a panel block.
G4_TARGET_VNNI inline __m512 GroupScale(const uint8_t* block, __m512 d, int64_t g) {
  const __m128i sc = _mm_load_si128(reinterpret_cast<const __m128i*>(block + kScalesAt + 16 * g));
  return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)));
}

G4_TARGET_VNNI inline __m512 BlockD(const uint8_t* block) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kDAt)));
}

// One row of x against panels [begin, end).
G4_TARGET_VNNI void DecodePanels(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x,
                                 int64_t begin, int64_t end, float* y) {
  const int64_t blocks = K / 256, panel_bytes = blocks * kBlockBytes;
  for (int64_t p = begin; p < end; ++p) {
    const uint8_t* panel = packed + p * panel_bytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* block = panel + b * kBlockBytes;
      for (int64_t off = 0; off < kBlockBytes; off += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(block + kAhead + off), _MM_HINT_T0);
      }
      const int8_t* xb = x.xq.data() + 256 * b;
      __m512i dot[16];
      for (int g = 0; g < 16; ++g) {
        dot[g] = _mm512_set1_epi32(-32 * x.sx16[static_cast<size_t>(16 * b + g)]);
      }
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 8; ++k) {
          const uint8_t* lines = block + 64 * 3 * (8 * h + k);
          const __m512i a0 = _mm512_load_si512(lines), a1 = _mm512_load_si512(lines + 64);
          const __m512i c = _mm512_load_si512(lines + 128);
          const int base = 128 * h + 4 * k, g0 = 8 * h + k / 4;
          for (int j = 0; j < 4; ++j) {
            dot[g0 + 2 * j] = _mm512_dpbusd_epi32(dot[g0 + 2 * j], Part(j % 2 ? a1 : a0, c, j),
                                                  Broadcast4(xb, base + 32 * j));
          }
        }
      }
      const __m512 d = BlockD(block);
      for (int g = 0; g < 16; ++g) {
        const __m512 s = _mm512_mul_ps(GroupScale(block, d, g),
                                       _mm512_set1_ps(x.dx[static_cast<size_t>(8 * b + g / 2)]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[g]), s, acc);
      }
    }
    const int64_t rows = std::min(kRows, N - p * kRows);
    _mm512_mask_storeu_ps(y + p * kRows, static_cast<__mmask16>((1u << rows) - 1), acc);
  }
}

// kG consecutive panels from p0 against kX rows of x from t0 (y: [T, N]), a group at a time.
template <int kG, int kX>
G4_TARGET_VNNI void Tile(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x, int64_t p0,
                         int64_t t0, float* y) {
  const int64_t blocks = K / 256, panel_bytes = blocks * kBlockBytes;
  __m512 acc[kG][kX];
  for (int i = 0; i < kG; ++i) {
    for (int t = 0; t < kX; ++t) acc[i][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block[kG];
    __m512 d[kG];
    for (int i = 0; i < kG; ++i) {
      block[i] = packed + (p0 + i) * panel_bytes + b * kBlockBytes;
      d[i] = BlockD(block[i]);
    }
    for (int g = 0; g < 16; ++g) {
      const int h = g / 8, j = g % 8 / 2, half = g % 2;
      __m512i dot[kG][kX];
      for (int t = 0; t < kX; ++t) {
        const int32_t sx = x.sx16[static_cast<size_t>((t0 + t) * (K / 16) + 16 * b + g)];
        for (int i = 0; i < kG; ++i) dot[i][t] = _mm512_set1_epi32(-32 * sx);
      }
      for (int k4 = 0; k4 < 4; ++k4) {
        const int k = 4 * half + k4;
        const int64_t line = 3 * (8 * h + k);
        __m512i u[kG];
        for (int i = 0; i < kG; ++i) {
          const __m512i a = _mm512_load_si512(block[i] + 64 * (line + j % 2));
          u[i] = Part(a, _mm512_load_si512(block[i] + 64 * (line + 2)), j);
        }
        for (int t = 0; t < kX; ++t) {
          const __m512i xv =
              Broadcast4(x.xq.data() + (t0 + t) * K + 256 * b, 128 * h + 32 * j + 4 * k);
          for (int i = 0; i < kG; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], u[i], xv);
        }
      }
      for (int i = 0; i < kG; ++i) {
        const __m512 sc = GroupScale(block[i], d[i], g);
        for (int t = 0; t < kX; ++t) {
          const float dx = x.dx[static_cast<size_t>((t0 + t) * (K / kQ8Block) + 8 * b + g / 2)];
          acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][t]),
                                      _mm512_mul_ps(sc, _mm512_set1_ps(dx)), acc[i][t]);
        }
      }
    }
  }
  for (int i = 0; i < kG; ++i) {
    const int64_t rows = std::min(kRows, N - (p0 + i) * kRows);
    const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
    for (int t = 0; t < kX; ++t) {
      _mm512_mask_storeu_ps(y + (t0 + t) * N + (p0 + i) * kRows, m, acc[i][t]);
    }
  }
}

template <int kG>
void TileRowsOfX(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x, int64_t p0,
                 int64_t t0, int64_t count, float* y) {
  switch (count) {
    case 1: return Tile<kG, 1>(packed, N, K, x, p0, t0, y);
    case 2: return Tile<kG, 2>(packed, N, K, x, p0, t0, y);
    case 3: return Tile<kG, 3>(packed, N, K, x, p0, t0, y);
    default: return Tile<kG, 4>(packed, N, K, x, p0, t0, y);
  }
}
#endif  // G4_Q6P_X86

}  // namespace

int64_t Q6KPanelBytes(int64_t K) { return K / 256 * kBlockBytes; }

void PackPanelQ6K(const TensorView& w, int64_t p, uint8_t* out) {
  const int64_t N = w.dim(0), K = w.dim(1), blocks = K / 256;
  std::memset(out, 0, static_cast<size_t>(Q6KPanelBytes(K)));
  const int64_t n0 = p * kRows, rows = std::min(kRows, N - n0);
  const uint8_t* data = static_cast<const uint8_t*>(w.data);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = out + b * kBlockBytes;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* src = data + (n0 + r) * w.quant.row_bytes + b * 210;
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t k = 0; k < 8; ++k) {
          uint8_t* lines = block + 64 * 3 * (8 * h + k) + 4 * r;
          std::memcpy(lines, src + 64 * h + 4 * k, 4);
          std::memcpy(lines + 64, src + 64 * h + 32 + 4 * k, 4);
          std::memcpy(lines + 128, src + 128 + 32 * h + 4 * k, 4);
        }
      }
      for (int64_t g = 0; g < 16; ++g) block[kScalesAt + 16 * g + r] = src[192 + g];
      std::memcpy(block + kDAt + 2 * r, src + 208, 2);
    }
  }
}

void MatMulQ8aPackedQ6K(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                        float* y) {
#if G4_Q6P_X86
  const int64_t N = w.dim(0), K = w.dim(1), panels = (N + kRows - 1) / kRows;
  thread_local Q6X caller_x;
  Q6X& q = caller_x;  // named through a reference: the workers read the caller's
  QuantizeRows(pool, x, T, K, q);
  const uint8_t* packed = static_cast<const uint8_t*>(w.quant.panels);
  if (T == 1) {
    const int64_t grain = std::max<int64_t>(1, (int64_t{64} << 10) / Q6KPanelBytes(K));
    pool.ParallelFor(panels, grain, [&](int64_t b, int64_t e) {
      DecodePanels(packed, N, K, q, b, e, y);
    });
    return;
  }
  pool.ParallelFor(panels, 2, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; p += 2) {
      for (int64_t t0 = 0; t0 < T; t0 += 4) {
        const int64_t count = std::min<int64_t>(4, T - t0);
        if (p + 1 < end) {
          TileRowsOfX<2>(packed, N, K, q, p, t0, count, y);
        } else {
          TileRowsOfX<1>(packed, N, K, q, p, t0, count, y);
        }
      }
    }
  });
#else
  (void)pool, (void)w, (void)x, (void)T, (void)y;
#endif
}

}  // namespace g4::cpu
