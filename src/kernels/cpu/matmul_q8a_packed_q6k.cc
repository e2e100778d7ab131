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
#include <utility>
#include <vector>

#include "core/q8_blocks.h"
#include "kernels/cpu/q8_blocks.h"

#include "kernels/cpu/q8a_x86.h"

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

// x quantized into the calling thread's buffer, which the pool's workers then read.
const Q6X& CallerX(ThreadPool& pool, const float* x, int64_t T, int64_t K) {
  thread_local Q6X caller_x;
  QuantizeRows(pool, x, T, K, caller_x);
  return caller_x;
}

// Panels a decode chunk takes: at least 64 KiB of them.
int64_t DecodeGrain(int64_t K) {
  return std::max<int64_t>(1, (int64_t{64} << 10) / Q6KPanelBytes(K));
}

#if G4_Q8A_X86
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

// ---- avx2 ---------------------------------------------------------------------------------
// The same panels read 8 rows at a time: a 64-byte line's first 32 bytes are rows 0-7, the
// next 32 rows 8-15. vpmaddubsw sums pairs of u (< 64) times xq in int16; two of those, 4 x 63
// x 128 = 32256, still fit before vpmaddwd widens them. A group of 16 values is 4 lines of one
// part j, so the groups run one after another with their sums in a few registers (the 16 of
// the vnni512 kernel do not fit AVX2's 16 registers beside the rest).

// Bytes ahead that a group prefetches its share of: a block and a bit. E2B's Q6_K head from
// DRAM, 2 threads, medians of 3 alternated 3 times: 19.4-22.4 ms at 2048, 17.6-22.5 at 4096,
// 17.5-20.3 at 6144 (the Q8_0 copy: 22.8-26.1).
constexpr int64_t kAheadAvx2 = 4096;
constexpr int kLinesPerBlock = kBlockBytes / 64;
// The group helpers must fold into one function: called, their __m256 arguments go through
// memory.
#define G4_ALWAYS_INLINE __attribute__((always_inline))

template <int kJ>
G4_TARGET_AVX2 inline __m256i PartAvx2(__m256i a, __m256i c) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30);
  const __m256i nib = kJ < 2 ? _mm256_and_si256(a, low4)
                             : _mm256_and_si256(_mm256_srli_epi16(a, 4), low4);
  __m256i hi;
  if constexpr (kJ == 0) hi = _mm256_slli_epi16(c, 4);
  if constexpr (kJ == 1) hi = _mm256_slli_epi16(c, 2);
  if constexpr (kJ == 2) hi = c;
  if constexpr (kJ == 3) hi = _mm256_srli_epi16(c, 2);
  return _mm256_or_si256(nib, _mm256_and_si256(hi, top2));
}

// Where TileAvx2's tile reads in panel block b: its bytes, and x's values, sums of 16 and
// scales of that block for the tile's first row of x (the next rows kxq, ksx, kdx further on).
struct TileAt {
  const uint8_t* block;
  const int8_t* xq;
  const int32_t* sx16;
  const float* dx;
  int64_t kxq, ksx, kdx;
  int h0;  // the tile's rows: 8 h0 .. of the panel
};

// Group kG (part j of lines 4 (kG % 2) .. + 3 of half kG / 8) into acc: its integer sums, then
// scale d of the rows times the group's int8 scale times x's block scale. Every offset is a
// constant: with g and j known at run time, the address arithmetic cost as many instructions
// as the SIMD work.
template <int kX, int kH, int kG>
G4_TARGET_AVX2 G4_ALWAYS_INLINE inline void GroupAvx2(const TileAt& at, const __m256 (&d)[kH],
                                                       __m256 (&acc)[kX][kH]) {
  constexpr bool kPair = kX * kH <= 2;  // int16 pairs of lines: registers for few tiles only
  constexpr int kJ = kG % 8 / 2, kHb = kG / 8, k0 = 4 * (kG % 2);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i dot[kX][kH], s[kX][kH];
  for (int t = 0; t < kX; ++t) {
    const int32_t sx = at.sx16[t * at.ksx + kG];
    for (int h = 0; h < kH; ++h) dot[t][h] = _mm256_set1_epi32(-32 * sx);
  }
  for (int k = k0; k < k0 + 4; ++k) {
    const uint8_t* lines = at.block + 64 * 3 * (8 * kHb + k);
    __m256i u[kH];
    for (int h = 0; h < kH; ++h) {
      const int64_t off = 32 * (at.h0 + h);
      u[h] = PartAvx2<kJ>(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(lines + 64 * (kJ % 2) + off)),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(lines + 128 + off)));
    }
    for (int t = 0; t < kX; ++t) {
      const __m256i xv = x86::Broadcast4Avx2(at.xq + t * at.kxq, 128 * kHb + 32 * kJ + 4 * k);
      for (int h = 0; h < kH; ++h) {
        const __m256i m = _mm256_maddubs_epi16(u[h], xv);
        if constexpr (kPair) {
          if (k % 2 == 0) {
            s[t][h] = m;
            continue;
          }
          dot[t][h] = _mm256_add_epi32(dot[t][h],
                                       _mm256_madd_epi16(_mm256_add_epi16(s[t][h], m), ones));
        } else {
          dot[t][h] = _mm256_add_epi32(dot[t][h], _mm256_madd_epi16(m, ones));
        }
      }
    }
  }
  __m256 sc[kH];
  for (int h = 0; h < kH; ++h) {
    const __m128i bytes = _mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(at.block + kScalesAt + 16 * kG + 8 * (at.h0 + h)));
    sc[h] = _mm256_mul_ps(d[h], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)));
  }
  for (int t = 0; t < kX; ++t) {
    const __m256 dx = _mm256_set1_ps(at.dx[t * at.kdx + kG / 2]);
    for (int h = 0; h < kH; ++h) {
      acc[t][h] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t][h]), _mm256_mul_ps(sc[h], dx), acc[t][h]);
    }
  }
}

// Group kG after prefetching its share of a block ahead (a few lines a group, not a burst per
// block).
template <int kX, int kH, int kG>
G4_TARGET_AVX2 G4_ALWAYS_INLINE inline void FetchGroupAvx2(const TileAt& at, bool fetch,
                                                            const __m256 (&d)[kH],
                                                            __m256 (&acc)[kX][kH]) {
  if (fetch) {
    for (int l = kLinesPerBlock * kG / 16; l < kLinesPerBlock * (kG + 1) / 16; ++l) {
      _mm_prefetch(reinterpret_cast<const char*>(at.block + kAheadAvx2 + 64 * l), _MM_HINT_T0);
    }
  }
  // Keeps the compiler from gathering the 16 groups' prefetches into one burst at the top of
  // the block (constant offsets let it; the burst ran E2B's head at 24-35 ms, spread at 16-18).
  asm volatile("" ::: "memory");
  GroupAvx2<kX, kH, kG>(at, d, acc);
}

// The 16 groups of a block in order.
template <int kX, int kH, int... kG>
G4_TARGET_AVX2 G4_ALWAYS_INLINE inline void BlockAvx2(const TileAt& at, bool fetch,
                                                       const __m256 (&d)[kH],
                                                       __m256 (&acc)[kX][kH],
                                                       std::integer_sequence<int, kG...>) {
  (FetchGroupAvx2<kX, kH, kG>(at, fetch, d, acc), ...);
}

// Rows 8 h0 .. 8 (h0 + kH) - 1 of panel p against kX rows of x from t0 (y: [T, N]). Decode
// takes both halves in one pass (kH = 2), prefill one half at a time.
template <int kX, int kH>
G4_TARGET_AVX2 void TileAvx2(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x,
                             int64_t p, int64_t t0, int h0, float* y) {
  const int64_t blocks = K / 256;
  const uint8_t* panel = packed + p * blocks * kBlockBytes;
  const bool fetch = t0 == 0 && h0 == 0;  // the first pass over the panel
  __m256 acc[kX][kH];
  for (int t = 0; t < kX; ++t) {
    for (int h = 0; h < kH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const TileAt at{panel + b * kBlockBytes,
                    x.xq.data() + t0 * K + 256 * b,
                    x.sx16.data() + t0 * (K / 16) + 16 * b,
                    x.dx.data() + t0 * (K / kQ8Block) + 8 * b,
                    K,
                    K / 16,
                    K / kQ8Block,
                    h0};
    __m256 d[kH];
    for (int h = 0; h < kH; ++h) {
      d[h] = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(at.block + kDAt + 16 * (h0 + h))));
    }
    BlockAvx2<kX, kH>(at, fetch, d, acc, std::make_integer_sequence<int, 16>{});
  }
  const int64_t r0 = p * kRows + 8 * h0;  // first row of the tile
  const int64_t rows = std::clamp<int64_t>(N - r0, 0, 8 * kH);
  for (int t = 0; t < kX; ++t) {
    alignas(32) float full[8 * kH];
    for (int h = 0; h < kH; ++h) _mm256_store_ps(full + 8 * h, acc[t][h]);
    std::copy_n(full, rows, y + (t0 + t) * N + r0);
  }
}

template <int kX>
G4_TARGET_AVX2 void HalvesAvx2(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x,
                               int64_t p, int64_t t0, float* y) {
  TileAvx2<kX, 1>(packed, N, K, x, p, t0, 0, y);
  if (N > p * kRows + 8) TileAvx2<kX, 1>(packed, N, K, x, p, t0, 1, y);
}

// Panels [begin, end) against every row of x (T of them); T > 1 in tiles of 4 rows of x.
G4_TARGET_AVX2 void PanelsAvx2(const uint8_t* packed, int64_t N, int64_t K, const Q6X& x,
                               int64_t T, int64_t begin, int64_t end, float* y) {
  for (int64_t p = begin; p < end; ++p) {
    if (T == 1) {
      TileAvx2<1, 2>(packed, N, K, x, p, 0, 0, y);
      continue;
    }
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      switch (std::min<int64_t>(4, T - t0)) {
        case 1: HalvesAvx2<1>(packed, N, K, x, p, t0, y); break;
        case 2: HalvesAvx2<2>(packed, N, K, x, p, t0, y); break;
        case 3: HalvesAvx2<3>(packed, N, K, x, p, t0, y); break;
        default: HalvesAvx2<4>(packed, N, K, x, p, t0, y); break;
      }
    }
  }
}
#endif  // G4_Q8A_X86

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
#if G4_Q8A_X86
  const int64_t N = w.dim(0), K = w.dim(1), panels = (N + kRows - 1) / kRows;
  const Q6X& q = CallerX(pool, x, T, K);
  const uint8_t* packed = static_cast<const uint8_t*>(w.quant.panels);
  if (T == 1) {
    pool.ParallelFor(panels, DecodeGrain(K), [&](int64_t b, int64_t e) {
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

void MatMulQ8aPackedQ6KAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                            float* y) {
#if G4_Q8A_X86
  const int64_t N = w.dim(0), K = w.dim(1), panels = (N + kRows - 1) / kRows;
  const Q6X& q = CallerX(pool, x, T, K);
  const uint8_t* packed = static_cast<const uint8_t*>(w.quant.panels);
  // Decode: chunks of at least 64 KiB, as the vnni512 kernel; prefill: a panel at a time.
  pool.ParallelFor(panels, T == 1 ? DecodeGrain(K) : 1, [&](int64_t b, int64_t e) {
    PanelsAvx2(packed, N, K, q, T, b, e, y);
  });
#else
  (void)pool, (void)w, (void)x, (void)T, (void)y;
#endif
}

}  // namespace g4::cpu
