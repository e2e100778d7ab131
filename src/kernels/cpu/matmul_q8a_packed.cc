// MatMulQ8aPacked (matmul_q8a_packed.h). The per-row decode kernels (matmul_q8a.cc) spend a
// convert, a scale gather and a horizontal sum on every row and block; the per-call panels
// (matmul_q8a_gemm.cc) unpack each weight to a byte per value, once per call. A packed panel is
// 16 rows at the file's own width, laid out so that int32 lane r of a line is row r:
//
//   panel = pairs of blocks (the block count rounded up to even, the extra block zero):
//     [block 2i: lines][block 2i + 1: lines][16 f16 scales of 2i][16 f16 scales of 2i + 1]
//   Q4_0 line k (k < 4): dword r = qs bytes 4k .. 4k + 3 of row r; the low nibbles are values
//     4k .. 4k + 3, the high ones 16 + 4k .. (4 lines, 256 bytes).
//   Q5_0: the same 4 lines, then 8 masks of 64 bits (one per nibble half of a line: bit 4r + j
//     is qh bit 4k + j, then 16 + 4k + j, of row r): the fifth bits, added as 16 under a mask.
//   Q8_0 line k (k < 8): dword r = q bytes 4k .. 4k + 3 of row r, + 128 (unsigned).
//
// Every pair is a whole number of 64-byte lines (Q4_0 576, Q5_0 704, Q8_0 1088 bytes), so with
// the buffer 64-byte aligned no load splits a cache line. Rows past N are zero, as are their
// scales (outputs masked off). A block of 16 rows against one row of x: per line, the unsigned
// values (vpdpbusd) against x's 4 bytes broadcast, started at -offset * sum(x over the block)
// (Q8DotOffset), then one convert + scale + FMA for all 16 rows. The integer sums are those of
// the per-row kernels and of ref::MatMulQ8a (exact in int32); only the f32 order of the blocks'
// sum differs.

#include "kernels/cpu/matmul_q8a_packed.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/gguf_blocks.h"
#include "core/q8_blocks.h"
#include "kernels/cpu/matmul_q8a_packed_q6k.h"
#include "kernels/cpu/q8_blocks.h"
#include "kernels/cpu/q8a_x86.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace g4::cpu {
namespace {

constexpr int64_t kRows = kQ8aPanelRows;

struct Layout {
  QuantKind kind;
  int64_t N, K, blocks, pairs, panels;
  int64_t lines, block_bytes, pair_bytes, panel_bytes;
};

Layout LayoutOf(QuantKind kind, int64_t N, int64_t K) {
  Layout l{};
  l.kind = kind;
  l.N = N;
  l.K = K;
  l.blocks = K / kQ8Block;
  l.pairs = (l.blocks + 1) / 2;
  l.panels = (N + kRows - 1) / kRows;
  l.lines = kind == QuantKind::kQ8_0 ? 8 : 4;
  l.block_bytes = l.lines * 64 + (kind == QuantKind::kQ5_0 ? 64 : 0);
  l.pair_bytes = 2 * l.block_bytes + 64;
  l.panel_bytes = l.pairs * l.pair_bytes;
  return l;
}

// Panel p, whose rows start at data (row_bytes apart), into out (panel_bytes, zeroed here).
void PackPanel(const uint8_t* data, int64_t row_bytes, const Layout& l, int64_t p, uint8_t* out) {
  std::memset(out, 0, static_cast<size_t>(l.panel_bytes));
  const int64_t rows = std::min(kRows, l.N - p * kRows);
  const int64_t bytes = GgufBlockFormat(l.kind).bytes;
  for (int64_t b = 0; b < l.blocks; ++b) {
    uint8_t* pair = out + b / 2 * l.pair_bytes;
    uint8_t* block = pair + b % 2 * l.block_bytes;
    uint8_t* scales = pair + 2 * l.block_bytes + 32 * (b % 2);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* src = data + r * row_bytes + b * bytes;
      std::memcpy(scales + 2 * r, src, 2);
      if (l.kind == QuantKind::kQ8_0) {
        for (int64_t i = 0; i < 32; ++i) {
          block[64 * (i / 4) + 4 * r + i % 4] = static_cast<uint8_t>(src[2 + i] ^ 0x80);
        }
        continue;
      }
      const bool q5 = l.kind == QuantKind::kQ5_0;
      const uint8_t* qs = src + (q5 ? 6 : 2);
      for (int64_t k = 0; k < 4; ++k) std::memcpy(block + 64 * k + 4 * r, qs + 4 * k, 4);
      if (!q5) continue;
      uint32_t qh;
      std::memcpy(&qh, src + 2, 4);
      for (int64_t m = 0; m < 8; ++m) {  // m < 4: low nibbles of line m; else high of m - 4
        const uint32_t four = (qh >> (m < 4 ? 4 * m : 16 + 4 * (m - 4))) & 0xfu;
        uint64_t mask;
        std::memcpy(&mask, block + 256 + 8 * m, 8);
        mask |= uint64_t{four} << (4 * r);
        std::memcpy(block + 256 + 8 * m, &mask, 8);
      }
    }
  }
}

// x's rows quantized (QuantizeQ8Blocks) into 2 * pairs blocks each, the extra block zero.
struct PackedX {
  std::vector<int8_t> xq;   // [T, 64 * pairs]
  std::vector<float> dx;    // [T, 2 * pairs]
  std::vector<int32_t> sx;  // [T, 2 * pairs]
};

void QuantizeRows(ThreadPool& pool, const Layout& l, const float* x, int64_t T, PackedX& q) {
  const int64_t bp = 2 * l.pairs, kp = bp * kQ8Block;
  q.xq.resize(static_cast<size_t>(T * kp));
  q.dx.resize(static_cast<size_t>(T * bp));
  q.sx.resize(static_cast<size_t>(T * bp));
  const auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int8_t* xq = q.xq.data() + t * kp;
      float* dx = q.dx.data() + t * bp;
      int32_t* sx = q.sx.data() + t * bp;
      cpu::QuantizeQ8Blocks(x + t * l.K, l.K, xq, dx, sx);
      if (l.blocks < bp) {
        std::memset(xq + l.K, 0, kQ8Block);
        dx[l.blocks] = 0.0f;
        sx[l.blocks] = 0;
      }
    }
  };
  if (T == 1) return rows(0, 1);
  pool.ParallelFor(T, 1, rows);
}

// x's rows quantized (QuantizeRows) into the calling thread's buffer, which the workers read
// through the reference (a thread_local named inside their lambdas would be each one's own).
const PackedX& CallerX(ThreadPool& pool, const Layout& l, const float* x, int64_t T) {
  thread_local PackedX caller_x;
  QuantizeRows(pool, l, x, T, caller_x);
  return caller_x;
}

#if G4_Q8A_X86
// Bytes ahead of the line being read that each line is prefetched: the next pairs of the same
// stream (the prefetchers stop at 4 KiB page boundaries; this does not).
constexpr int64_t kAhead = 1024;

template <QuantKind kKind>
struct Kind {
  static constexpr int kLines = kKind == QuantKind::kQ8_0 ? 8 : 4;
  static constexpr int64_t kBlockBytes = kLines * 64 + (kKind == QuantKind::kQ5_0 ? 64 : 0);
  static constexpr int64_t kPairBytes = 2 * kBlockBytes + 64;
  static constexpr int32_t kOffset = Q8DotOffset(kKind);
};

// The unsigned values of line k of a block: lo (Q8_0: the line itself) and, for 4-bit lines, hi
// (values 16 + ..), Q5_0's fifth bits added.
template <QuantKind kKind>
G4_TARGET_VNNI inline void Unpack(const uint8_t* block, int k, __m512i& lo, __m512i& hi) {
  const __m512i v = _mm512_load_si512(block + 64 * k);
  if constexpr (kKind == QuantKind::kQ8_0) {
    lo = v;
    hi = v;
    return;
  }
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  lo = _mm512_and_si512(v, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  if constexpr (kKind == QuantKind::kQ5_0) {
    uint64_t mlo, mhi;
    std::memcpy(&mlo, block + 256 + 8 * k, 8);
    std::memcpy(&mhi, block + 256 + 32 + 8 * k, 8);
    const __m512i sixteen = _mm512_set1_epi8(16);
    lo = _mm512_mask_add_epi8(lo, static_cast<__mmask64>(mlo), lo, sixteen);
    hi = _mm512_mask_add_epi8(hi, static_cast<__mmask64>(mhi), hi, sixteen);
  }
}

// x's 4 bytes from byte i of a row (xq) on every lane.
G4_TARGET_VNNI inline __m512i Broadcast4(const int8_t* xq, int64_t i) {
  int32_t four;
  std::memcpy(&four, xq + i, 4);
  return _mm512_set1_epi32(four);
}

// acc += pair i of a panel (16 rows) against x.
template <QuantKind kKind>
G4_TARGET_VNNI inline __m512 PairStep(const uint8_t* pair, const PackedX& x, int64_t i,
                                      __m512 acc) {
  using K = Kind<kKind>;
  for (int64_t off = 0; off < K::kPairBytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(pair + kAhead + off), _MM_HINT_T0);
  }
  for (int j = 0; j < 2; ++j) {
    const int64_t b = 2 * i + j;
    const uint8_t* block = pair + j * K::kBlockBytes;
    const int8_t* xb = x.xq.data() + b * kQ8Block;
    // Two chains per block (low and high halves) so that consecutive vpdpbusd overlap.
    __m512i d0 = _mm512_set1_epi32(-K::kOffset * x.sx[static_cast<size_t>(b)]);
    __m512i d1 = _mm512_setzero_si512();
    if constexpr (kKind == QuantKind::kQ8_0) {
      for (int k = 0; k < 8; k += 2) {
        d0 = _mm512_dpbusd_epi32(d0, _mm512_load_si512(block + 64 * k), Broadcast4(xb, 4 * k));
        d1 = _mm512_dpbusd_epi32(d1, _mm512_load_si512(block + 64 * (k + 1)),
                                 Broadcast4(xb, 4 * k + 4));
      }
    } else {
      for (int k = 0; k < 4; ++k) {
        __m512i lo, hi;
        Unpack<kKind>(block, k, lo, hi);
        d0 = _mm512_dpbusd_epi32(d0, lo, Broadcast4(xb, 4 * k));
        d1 = _mm512_dpbusd_epi32(d1, hi, Broadcast4(xb, 16 + 4 * k));
      }
    }
    const __m512 sc = _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(pair + 2 * K::kBlockBytes + 32 * j)));
    const __m512 s = _mm512_mul_ps(sc, _mm512_set1_ps(x.dx[static_cast<size_t>(b)]));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), s, acc);
  }
  return acc;
}

G4_TARGET_VNNI inline void StorePanel(const Layout& l, int64_t p, __m512 acc, float* y) {
  const int64_t rows = std::min(kRows, l.N - p * kRows);
  _mm512_mask_storeu_ps(y + p * kRows, static_cast<__mmask16>((1u << rows) - 1), acc);
}

// One row of x against panels [begin, end): y[16 p + r] for the rows that exist.
template <QuantKind kKind>
G4_TARGET_VNNI void DecodePanels(const Layout& l, const uint8_t* packed, const PackedX& x,
                                 int64_t begin, int64_t end, float* y) {
  using K = Kind<kKind>;
  for (int64_t p = begin; p < end; ++p) {
    const uint8_t* panel = packed + p * l.panel_bytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < l.pairs; ++i) {
      acc = PairStep<kKind>(panel + i * K::kPairBytes, x, i, acc);
    }
    StorePanel(l, p, acc, y);
  }
}

// kG consecutive panels from p0 against kX rows of x from t0 (y: [T, N]).
template <QuantKind kKind, int kG, int kX>
G4_TARGET_VNNI void Tile(const Layout& l, const uint8_t* packed, const PackedX& x, int64_t p0,
                         int64_t t0, float* y) {
  using K = Kind<kKind>;
  const int64_t kp = 2 * l.pairs * kQ8Block, bp = 2 * l.pairs;
  __m512 acc[kG][kX];
  for (int g = 0; g < kG; ++g) {
    for (int t = 0; t < kX; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const uint8_t* first = packed + p0 * l.panel_bytes;
  for (int64_t b = 0; b < bp; ++b) {
    const int64_t pair_at = b / 2 * K::kPairBytes, block_at = pair_at + b % 2 * K::kBlockBytes;
    __m512i dot[kG][kX];
    for (int t = 0; t < kX; ++t) {
      const int32_t sx = x.sx[static_cast<size_t>((t0 + t) * bp + b)];
      const __m512i s = _mm512_set1_epi32(-K::kOffset * sx);
      for (int g = 0; g < kG; ++g) dot[g][t] = s;
    }
    for (int k = 0; k < K::kLines; ++k) {
      __m512i lo[kG], hi[kG];
      for (int g = 0; g < kG; ++g) {
        Unpack<kKind>(first + g * l.panel_bytes + block_at, k, lo[g], hi[g]);
      }
      for (int t = 0; t < kX; ++t) {
        const int8_t* xb = x.xq.data() + (t0 + t) * kp + b * kQ8Block;
        const __m512i xl = Broadcast4(xb, 4 * k);
        for (int g = 0; g < kG; ++g) dot[g][t] = _mm512_dpbusd_epi32(dot[g][t], lo[g], xl);
        if constexpr (kKind != QuantKind::kQ8_0) {
          const __m512i xh = Broadcast4(xb, 16 + 4 * k);
          for (int g = 0; g < kG; ++g) dot[g][t] = _mm512_dpbusd_epi32(dot[g][t], hi[g], xh);
        }
      }
    }
    for (int g = 0; g < kG; ++g) {
      const __m512 sc = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(
          first + g * l.panel_bytes + pair_at + 2 * K::kBlockBytes + 32 * (b % 2))));
      for (int t = 0; t < kX; ++t) {
        const float dx = x.dx[static_cast<size_t>((t0 + t) * bp + b)];
        const __m512 s = _mm512_mul_ps(sc, _mm512_set1_ps(dx));
        acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[g][t]), s, acc[g][t]);
      }
    }
  }
  for (int g = 0; g < kG; ++g) {
    const int64_t rows = std::min(kRows, l.N - (p0 + g) * kRows);
    const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
    for (int t = 0; t < kX; ++t) {
      _mm512_mask_storeu_ps(y + (t0 + t) * l.N + (p0 + g) * kRows, m, acc[g][t]);
    }
  }
}

template <QuantKind kKind, int kG>
void TileRowsOfX(const Layout& l, const uint8_t* packed, const PackedX& x, int64_t p0,
                 int64_t t0, int64_t count, float* y) {
  switch (count) {
    case 1: return Tile<kKind, kG, 1>(l, packed, x, p0, t0, y);
    case 2: return Tile<kKind, kG, 2>(l, packed, x, p0, t0, y);
    case 3: return Tile<kKind, kG, 3>(l, packed, x, p0, t0, y);
    default: return Tile<kKind, kG, 4>(l, packed, x, p0, t0, y);
  }
}

// Panels [begin, end) against every row of x, two panels at a time; each pair of panels stays in
// L2 while the rows of x pass over it in tiles of 4.
template <QuantKind kKind>
void GemmPanels(const Layout& l, const uint8_t* packed, const PackedX& x, int64_t T,
                int64_t begin, int64_t end, float* y) {
  for (int64_t p = begin; p < end; p += 2) {
    const bool two = p + 1 < end;
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int64_t count = std::min<int64_t>(4, T - t0);
      if (two) {
        TileRowsOfX<kKind, 2>(l, packed, x, p, t0, count, y);
      } else {
        TileRowsOfX<kKind, 1>(l, packed, x, p, t0, count, y);
      }
    }
  }
}

template <QuantKind kKind>
void Run(ThreadPool& pool, const Layout& l, const uint8_t* packed, const PackedX& x, int64_t T,
         float* y) {
  if (T == 1) {
    // Chunks of at least 64 KiB: shorter ones cost more in hand-offs than they stream.
    const int64_t grain = std::max<int64_t>(1, (int64_t{64} << 10) / l.panel_bytes);
    pool.ParallelFor(l.panels, grain, [&](int64_t b, int64_t e) {
      DecodePanels<kKind>(l, packed, x, b, e, y);
    });
    return;
  }
  pool.ParallelFor(l.panels, 2, [&](int64_t b, int64_t e) {
    GemmPanels<kKind>(l, packed, x, T, b, e, y);
  });
}

// ---- avx2 ---------------------------------------------------------------------------------
// The same panels without vpdpbusd: a 64-byte line is two halves of 8 rows; vpmaddubsw sums
// pairs of u * xq into int16 and vpmaddwd the pairs of pairs into the row's int32. Per 32
// weights of a row that is about 4 instructions, against 13 for the per-row kernel (a scale
// convert and broadcast, a horizontal chain per row; matmul_q8a.cc).
//  * Q4_0 / Q5_0: unsigned u under an offset, as on vnni512; Q5_0's fifth bits are expanded
//    from their masks to 16s and or-ed into the nibbles.
//  * Q8_0: the stored u = q + 128 would overflow a pair (2 * 255 * 127), so each line is turned
//    back into q (xor 0x80) and summed as |q| * sign(q) xq (2 * 128 * 127 = 32512 fits), with no
//    offset.
// A row's int16 sums are widened once their bound would pass int16: after 4 lines of Q4_0
// (8 * 2 * 15 * 127 = 30480), 2 of Q5_0 (4 * 2 * 31 * 127 = 31496), every line of Q8_0. The int32
// sums are the per-row kernels' and ref::MatMulQ8a's (exact); only the f32 order of the blocks'
// sum differs.

template <QuantKind kKind>
struct Avx2Kind {
  static constexpr bool kQ8 = kKind == QuantKind::kQ8_0;
  static constexpr int32_t kOffset = kQ8 ? 0 : Kind<kKind>::kOffset;  // Q8_0: signed q
  static constexpr int kWiden = kKind == QuantKind::kQ4_0 ? 4 : kKind == QuantKind::kQ5_0 ? 2 : 1;
};

// Half h (rows 8h .. 8h + 7) of line k of a block: the unsigned low and high values (Q4_0 /
// Q5_0), or for Q8_0 |q| in lo and q in hi (the signs for x).
template <QuantKind kKind>
G4_TARGET_AVX2 inline void UnpackAvx2(const uint8_t* block, int k, int h, __m256i& lo,
                                      __m256i& hi) {
  const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(block + 64 * k + 32 * h));
  if constexpr (kKind == QuantKind::kQ8_0) {
    hi = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
    lo = _mm256_sign_epi8(hi, hi);  // |-128| = 128 as an unsigned byte
    return;
  }
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(v, low4);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  if constexpr (kKind == QuantKind::kQ5_0) {
    uint32_t mlo, mhi;  // bits 32h .. 32h + 31 of the line's two masks
    std::memcpy(&mlo, block + 256 + 8 * k + 4 * h, 4);
    std::memcpy(&mhi, block + 256 + 32 + 8 * k + 4 * h, 4);
    lo = _mm256_or_si256(lo, x86::SixteenWhereBitAvx2(mlo));
    hi = _mm256_or_si256(hi, x86::SixteenWhereBitAvx2(mhi));
  }
}

// Bytes ahead that the AVX2 kernel prefetches, a line per line it reads. A burst of a pair's
// lines at a time (as on vnni512, 1024 ahead) streamed the 270M's Q8_0 head [262144, 640] at
// 11.7-12.9 GB/s on 2 AVX2 cores, this at 13.3-13.5 (Q4_0 [262144, 1536]: 14.6-15.9, 17.0-17.5).
constexpr int64_t kAheadAvx2 = 2048;

// Rows 8 h0 .. 8 (h0 + kH) - 1 of panel p (kH = 2: the whole panel; 1: one half) against kX rows
// of x from t0, stored into y: [T, N]. A line is unpacked once for the kX rows of x; a block's
// sums are shifted by -offset * sum(x) and scaled. Decode takes both halves in one pass over the
// panel; prefill one half at a time, so that the int16, int32 and f32 sums of 4 rows of x fit
// the 16 registers (both halves at once spilled them).
template <QuantKind kKind, int kX, int kH>
G4_TARGET_AVX2 void TileAvx2(const Layout& l, const uint8_t* packed, const PackedX& x, int64_t p,
                             int64_t t0, int h0, float* y) {
  using K = Kind<kKind>;
  using A = Avx2Kind<kKind>;
  const int64_t kp = 2 * l.pairs * kQ8Block, bp = 2 * l.pairs;
  const uint8_t* panel = packed + p * l.panel_bytes;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kX][kH];
  for (int t = 0; t < kX; ++t) {
    for (int h = 0; h < kH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < l.blocks; ++b) {
    const uint8_t* pair = panel + b / 2 * K::kPairBytes;
    const bool fetch = t0 == 0 && h0 == 0;  // the first pass over this block
    const uint8_t* block = pair + b % 2 * K::kBlockBytes;
    __m256i d[kX][kH], s[kX][kH];
    for (int t = 0; t < kX; ++t) {
      for (int h = 0; h < kH; ++h) d[t][h] = _mm256_setzero_si256();
    }
    for (int k = 0; k < K::kLines; ++k) {
      if (k % A::kWiden == 0) {
        for (int t = 0; t < kX; ++t) {
          for (int h = 0; h < kH; ++h) s[t][h] = _mm256_setzero_si256();
        }
      }
      if (fetch) {
        // One line ahead per line read; a burst of a whole pair's lines stalled the stream.
        _mm_prefetch(reinterpret_cast<const char*>(block + kAheadAvx2 + 64 * k), _MM_HINT_T0);
        if (k == 0 && K::kBlockBytes > 64 * K::kLines) {  // Q5_0's masks
          _mm_prefetch(reinterpret_cast<const char*>(block + kAheadAvx2 + 64 * K::kLines),
                       _MM_HINT_T0);
        }
        if (k == 0 && b % 2 == 0) {  // the pair's scales
          _mm_prefetch(reinterpret_cast<const char*>(pair + kAheadAvx2 + 2 * K::kBlockBytes),
                       _MM_HINT_T0);
        }
      }
      for (int h = 0; h < kH; ++h) {
        __m256i lo, hi;
        UnpackAvx2<kKind>(block, k, h0 + h, lo, hi);
        for (int t = 0; t < kX; ++t) {
          const int8_t* xb = x.xq.data() + (t0 + t) * kp + b * kQ8Block;
          if constexpr (A::kQ8) {
            const __m256i xs = _mm256_sign_epi8(x86::Broadcast4Avx2(xb, 4 * k), hi);
            s[t][h] = _mm256_maddubs_epi16(lo, xs);
          } else {
            const __m256i xl = x86::Broadcast4Avx2(xb, 4 * k);
            const __m256i xh = x86::Broadcast4Avx2(xb, 16 + 4 * k);
            s[t][h] = _mm256_add_epi16(s[t][h], _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl),
                                                                 _mm256_maddubs_epi16(hi, xh)));
          }
        }
      }
      if (k % A::kWiden == A::kWiden - 1) {
        for (int t = 0; t < kX; ++t) {
          for (int h = 0; h < kH; ++h) {
            d[t][h] = _mm256_add_epi32(d[t][h], _mm256_madd_epi16(s[t][h], ones));
          }
        }
      }
    }
    const uint8_t* scales = pair + 2 * K::kBlockBytes + 32 * (b % 2);
    __m256 sc[kH];
    for (int h = 0; h < kH; ++h) {
      sc[h] = _mm256_cvtph_ps(
          _mm_load_si128(reinterpret_cast<const __m128i*>(scales + 16 * (h0 + h))));
    }
    for (int t = 0; t < kX; ++t) {
      const size_t at = static_cast<size_t>((t0 + t) * bp + b);
      const __m256 dx = _mm256_set1_ps(x.dx[at]);
      for (int h = 0; h < kH; ++h) {
        if constexpr (A::kOffset != 0) {
          d[t][h] = _mm256_add_epi32(d[t][h], _mm256_set1_epi32(-A::kOffset * x.sx[at]));
        }
        acc[t][h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[t][h]), _mm256_mul_ps(sc[h], dx), acc[t][h]);
      }
    }
  }
  const int64_t r0 = p * kRows + 8 * h0;  // first row of the tile
  const int64_t rows = std::clamp<int64_t>(l.N - r0, 0, 8 * kH);
  for (int t = 0; t < kX; ++t) {
    float* out = y + (t0 + t) * l.N + r0;
    if (rows == 8 * kH) {
      for (int h = 0; h < kH; ++h) _mm256_storeu_ps(out + 8 * h, acc[t][h]);
    } else {
      alignas(32) float full[8 * kH];
      for (int h = 0; h < kH; ++h) _mm256_store_ps(full + 8 * h, acc[t][h]);
      std::copy_n(full, rows, out);
    }
  }
}

template <QuantKind kKind, int kX>
G4_TARGET_AVX2 void HalvesAvx2(const Layout& l, const uint8_t* packed, const PackedX& x,
                               int64_t p, int64_t t0, float* y) {
  TileAvx2<kKind, kX, 1>(l, packed, x, p, t0, 0, y);
  if (l.N > p * kRows + 8) TileAvx2<kKind, kX, 1>(l, packed, x, p, t0, 1, y);
}

// Panels [begin, end) against every row of x (T of them; y: [T, N]); T > 1 in tiles of 4 rows
// of x, each panel staying in L1/L2 while the rows of x pass over it.
template <QuantKind kKind>
G4_TARGET_AVX2 void PanelsAvx2(const Layout& l, const uint8_t* packed, const PackedX& x,
                               int64_t T, int64_t begin, int64_t end, float* y) {
  for (int64_t p = begin; p < end; ++p) {
    if (T == 1) {
      TileAvx2<kKind, 1, 2>(l, packed, x, p, 0, 0, y);
      continue;
    }
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      switch (std::min<int64_t>(4, T - t0)) {
        case 1: HalvesAvx2<kKind, 1>(l, packed, x, p, t0, y); break;
        case 2: HalvesAvx2<kKind, 2>(l, packed, x, p, t0, y); break;
        case 3: HalvesAvx2<kKind, 3>(l, packed, x, p, t0, y); break;
        default: HalvesAvx2<kKind, 4>(l, packed, x, p, t0, y); break;
      }
    }
  }
}
#endif  // G4_Q8A_X86

// panels * panel_bytes bytes, 2 MiB-aligned when that large so that transparent huge pages can
// back it (fewer TLB misses on a stream); null when the allocation fails.
std::shared_ptr<void> PanelBuffer(int64_t panels, int64_t panel_bytes) {
  const size_t bytes = static_cast<size_t>(panels * panel_bytes);
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t align = bytes >= kHuge ? kHuge : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* raw = std::aligned_alloc(align, rounded);
  if (raw == nullptr) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHuge) madvise(raw, rounded, MADV_HUGEPAGE);
#endif
  return std::shared_ptr<void>(raw, [](void* p) { std::free(p); });
}

}  // namespace

bool PacksQ8aPanels(QuantKind kind, int64_t K) {
  if (kind == QuantKind::kQ6_K) return K > 0 && K % 256 == 0;
  return (kind == QuantKind::kQ4_0 || kind == QuantKind::kQ5_0 || kind == QuantKind::kQ8_0) &&
         K > 0 && K % kQ8Block == 0;
}

PackedWeight PackQ8aPanels(ThreadPool& pool, const TensorView& w) {
  if (w.shape.size() != 2 || !PacksQ8aPanels(w.quant.kind, w.dim(1))) return {};
  const bool q6k = w.quant.kind == QuantKind::kQ6_K;
  const Layout l = LayoutOf(w.quant.kind, w.dim(0), w.dim(1));
  const int64_t panel_bytes = q6k ? Q6KPanelBytes(w.dim(1)) : l.panel_bytes;
  std::shared_ptr<void> out = PanelBuffer(l.panels, panel_bytes);
  if (out == nullptr) return {};
  uint8_t* dst = static_cast<uint8_t*>(out.get());
  const uint8_t* data = static_cast<const uint8_t*>(w.data);
  pool.ParallelFor(l.panels, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      if (q6k) {
        PackPanelQ6K(w, p, dst + p * panel_bytes);
      } else {
        PackPanel(data + p * kRows * w.quant.row_bytes, w.quant.row_bytes, l, p,
                  dst + p * panel_bytes);
      }
    }
  });
  return {std::move(out), kRows, panel_bytes};
}

PackedWeight PackQ8aPanelsFrom(ThreadPool& pool, QuantKind kind, int64_t N, int64_t K,
                               const PanelRowsFn& fill) {
  if (kind == QuantKind::kQ6_K || !PacksQ8aPanels(kind, K)) return {};
  const Layout l = LayoutOf(kind, N, K);
  const int64_t row_bytes = K / GgufBlockFormat(kind).elems * GgufBlockFormat(kind).bytes;
  std::shared_ptr<void> out = PanelBuffer(l.panels, l.panel_bytes);
  if (out == nullptr) return {};
  uint8_t* dst = static_cast<uint8_t*>(out.get());
  std::atomic<bool> ok{true};
  pool.ParallelFor(l.panels, 1, [&](int64_t b, int64_t e) {
    std::vector<uint8_t> rows(static_cast<size_t>(kRows * row_bytes));
    for (int64_t p = b; p < e && ok.load(std::memory_order_relaxed); ++p) {
      if (!fill(p, rows.data())) return ok.store(false, std::memory_order_relaxed);
      PackPanel(rows.data(), row_bytes, l, p, dst + p * l.panel_bytes);
    }
  });
  if (!ok.load()) return {};
  return {std::move(out), kRows, l.panel_bytes};
}

void MatMulQ8aPacked(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (w.quant.kind == QuantKind::kQ6_K) return MatMulQ8aPackedQ6K(pool, w, x, T, y);
#if G4_Q8A_X86
  const Layout l = LayoutOf(w.quant.kind, w.dim(0), w.dim(1));
  const PackedX& q = CallerX(pool, l, x, T);
  const uint8_t* packed = static_cast<const uint8_t*>(w.quant.panels);
  switch (l.kind) {
    case QuantKind::kQ4_0: return Run<QuantKind::kQ4_0>(pool, l, packed, q, T, y);
    case QuantKind::kQ5_0: return Run<QuantKind::kQ5_0>(pool, l, packed, q, T, y);
    default: return Run<QuantKind::kQ8_0>(pool, l, packed, q, T, y);
  }
#else
  (void)pool, (void)w, (void)x, (void)T, (void)y;
#endif
}

void MatMulQ8aPackedAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                         float* y) {
  if (w.quant.kind == QuantKind::kQ6_K) return MatMulQ8aPackedQ6KAvx2(pool, w, x, T, y);
#if G4_Q8A_X86
  const Layout l = LayoutOf(w.quant.kind, w.dim(0), w.dim(1));
  const PackedX& q = CallerX(pool, l, x, T);
  const uint8_t* packed = static_cast<const uint8_t*>(w.quant.panels);
  // Decode: chunks of at least 64 KiB, as the vnni512 kernel; prefill: a panel at a time.
  const int64_t grain = T == 1 ? std::max<int64_t>(1, (int64_t{64} << 10) / l.panel_bytes) : 1;
  pool.ParallelFor(l.panels, grain, [&](int64_t b, int64_t e) {
    switch (l.kind) {
      case QuantKind::kQ4_0: return PanelsAvx2<QuantKind::kQ4_0>(l, packed, q, T, b, e, y);
      case QuantKind::kQ5_0: return PanelsAvx2<QuantKind::kQ5_0>(l, packed, q, T, b, e, y);
      default: return PanelsAvx2<QuantKind::kQ8_0>(l, packed, q, T, b, e, y);
    }
  });
#else
  (void)pool, (void)w, (void)x, (void)T, (void)y;
#endif
}

}  // namespace g4::cpu
