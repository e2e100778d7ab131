#pragma once
// bf16 as a storage type only: the kernels convert with bit operations; WMMA (mma.h) reads it.
struct __nv_bfloat16 { unsigned short b; };
