#pragma once
#include "core/dtype.h"
struct __half { unsigned short b; };
inline __half __ushort_as_half(unsigned short b) { return {b}; }
inline float __half2float(__half h) { return g4::F16ToF32(h.b); }
