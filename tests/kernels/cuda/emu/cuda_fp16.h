#pragma once
#include "core/dtype.h"
struct __half { unsigned short b; };
inline __half __ushort_as_half(unsigned short b) { return {b}; }
inline unsigned short __half_as_ushort(__half h) { return h.b; }
inline float __half2float(__half h) { return g4::F16ToF32(h.b); }
inline __half __float2half_rn(float f) { return {g4::F32ToF16(f)}; }
