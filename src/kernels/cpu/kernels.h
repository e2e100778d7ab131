// CPU kernels: Highway SIMD with runtime ISA dispatch (the best target the running CPU
// supports, chosen once), multithreaded on the caller's ThreadPool. Each is tested against its
// ref twin (tests/kernels/). Contracts: see the op headers in src/ops/ (same file stems), whose
// signature types (MatMulOp ...) declare the kernels here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/matmul.h"
#include "ops/matmul_q8a.h"
#include "ops/moe.h"
#include "ops/residual_norm.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4::cpu {

// Name of the SIMD target dispatch selects on this machine, e.g. "AVX2", "AVX3", "NEON".
const char* TargetName();

// For tests and benchmarks: the targets that are both compiled in and supported by this CPU,
// best first (e.g. {"AVX3_DL", "AVX3", "AVX2", "SSE4", "SSSE3", "EMU128"}), and restricting
// dispatch to one of them so each code path can be checked on one machine. An empty name
// restores the default choice. Returns false (and changes nothing) for a name not in the list.
// Not thread-safe: call it only while no kernel is running.
std::vector<std::string> AvailableTargets();
bool SetTargetForTesting(const std::string& name);
// hwy::SupportedTargets() & HWY_TARGETS (what dispatch may choose now, a pinned target included),
// asked once: Highway runs cpuid on every call of its own, which a VM traps (measured 43 us a
// call on the 2-core VM: 12 ms per E2B token when every matmul asked).
int64_t SupportedTargetBits();

// Probes of the machine (probe.cc), for benchmarks: the median over `passes` of the read
// bandwidth in bytes/s of streaming a fresh `bytes` buffer on the pool's threads, and the f32
// FMA peak in flop/s (best of 3 runs of about `seconds`) on all of the pool's threads.
double MeasureReadBandwidth(ThreadPool& pool, size_t bytes, int passes);
double MeasureFmaPeak(ThreadPool& pool, double seconds);

MatMulOp MatMul;
// MatMul for quantized w (w.quantized()); MatMul calls it. Exposed for tests and benchmarks.
MatMulOp QuantMatMul;
// MatMul for GGUF block weights (IsGgufBlock(w.quant.kind), matmul_gguf.cc); MatMul calls it.
MatMulOp GgufMatMul;
// MatMulQ8a (ops/matmul_q8a.h, matmul_q8a.cc): MatMul with int8 activations where defined.
MatMulOp MatMulQ8a;
// The integer-dot path MatMulQ8a takes on this CPU now: "vnni512", "avx2" or "scalar".
const char* MatMulQ8aKernel();
// MatMulQ8a's load-time layout of w (PackWeightFn, ops/matmul_q8a.h): 16-row panels of Q4_0 /
// Q5_0 / Q8_0 / Q6_K rows (matmul_q8a_packed.h) where the vnni512 path runs, of all but Q6_K
// where avx2 runs, and of int4 groups of 32 as Q4_0 (matmul_q8a_int4.h) on both; null otherwise.
PackWeightOp PackQ8aWeight;
RmsNormOp RmsNorm;
// Plain C++ (rope.cc): the ref's f64 arithmetic, its cos / sin kept between calls.
RopeOp Rope;
AttentionOp Attention;
GeluMulOp GeluMul;
SoftcapOp Softcap;
EmbedOp Embed;
AddOp Add;
ScaleOp Scale;
ResidualNormOp ResidualNorm;
// Experts grouped by expert over cpu::MatMul (moe.cc); MoeQ8a over cpu::MatMulQ8a, for the
// table with int8 activations.
MoeOp Moe;
MoeOp MoeQ8a;

}  // namespace g4::cpu
