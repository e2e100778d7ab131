// The x86 targets of the int8-activation kernels (matmul_q8a.cc, matmul_q8a_packed.cc) and the
// AVX2 helpers both use. Functions carry their target as an attribute, so one translation unit
// holds every path and the live CPU picks (no -m flags on these files).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define G4_Q8A_X86 1
// GCC 12 reports its own _mm512_undefined_* placeholders (the upper halves a cast leaves
// unspecified, then overwritten by an insert) as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define G4_TARGET_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define G4_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define G4_Q8A_X86 0
#endif

#if G4_Q8A_X86
namespace g4::cpu::x86 {

// x's 4 bytes from byte i of a row (xq) on every 32-bit lane.
G4_TARGET_AVX2 inline __m256i Broadcast4Avx2(const int8_t* xq, int64_t i) {
  int32_t four;
  std::memcpy(&four, xq + i, 4);
  return _mm256_set1_epi32(four);
}

// Byte i = 16 where bit i of `bits` is set, else 0: Q5_0's fifth bits as values to add to the
// nibbles (byte i of the shuffled broadcast holds byte i / 8 of bits; one bit of it tested).
G4_TARGET_AVX2 inline __m256i SixteenWhereBitAvx2(uint32_t bits) {
  const __m256i which = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), which);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(16));
}

}  // namespace g4::cpu::x86
#endif  // G4_Q8A_X86
