// TargetName(): the Highway target that HWY_DYNAMIC_DISPATCH picks on this CPU, for the policy
// line ("isa=AVX3"). It is obtained by dispatching to a function compiled per target, so it is by
// construction the same choice the kernels in this folder make (they are all compiled for the
// same target list with the same flags). AvailableTargets() / SetTargetForTesting() let the
// tests and benchmarks run every compiled code path on one machine.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/target.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/targets.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {

// hwy::TargetName returns a string literal ("AVX2", "AVX3", "AVX3_DL", "SSE4", "NEON", ...).
const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {
namespace {

// Bits (HWY_TARGETS format, lower = better) compiled into this library and supported here.
// SetSupportedTargetsForTest(0) first, so a restriction in force does not hide targets.
int64_t CompiledAndSupported() {
  hwy::SetSupportedTargetsForTest(0);
  return hwy::SupportedTargets() & HWY_TARGETS;
}

int64_t g_forced_target = 0;  // 0: dispatch chooses freely

// SupportedTargetBits' answer; 0: not known (asked again after every change of the restriction).
std::atomic<int64_t> g_supported_bits{0};

}  // namespace

int64_t SupportedTargetBits() {
  int64_t bits = g_supported_bits.load(std::memory_order_relaxed);
  if (bits == 0) {
    bits = hwy::SupportedTargets() & HWY_TARGETS;
    g_supported_bits.store(bits, std::memory_order_relaxed);
  }
  return bits;
}

HWY_EXPORT(TargetNameImpl);

const char* TargetName() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

std::vector<std::string> AvailableTargets() {
  const int64_t bits = CompiledAndSupported();
  std::vector<std::string> names;
  for (int64_t rest = bits; rest != 0; rest &= rest - 1) {
    names.emplace_back(hwy::TargetName(rest & -rest));
  }
  if (g_forced_target != 0) hwy::SetSupportedTargetsForTest(g_forced_target);  // keep it in force
  g_supported_bits.store(0, std::memory_order_relaxed);
  return names;
}

namespace {

bool RestrictTargets(const std::string& name) {
  if (name.empty()) {
    g_forced_target = 0;
    hwy::SetSupportedTargetsForTest(0);  // also makes dispatch choose again
    return true;
  }
  const int64_t bits = CompiledAndSupported();
  for (int64_t rest = bits; rest != 0; rest &= rest - 1) {
    const int64_t target = rest & -rest;
    if (name == hwy::TargetName(target)) {
      g_forced_target = target;
      hwy::SetSupportedTargetsForTest(target);
      return true;
    }
  }
  if (g_forced_target != 0) hwy::SetSupportedTargetsForTest(g_forced_target);
  return false;
}

}  // namespace

bool SetTargetForTesting(const std::string& name) {
  const bool ok = RestrictTargets(name);
  g_supported_bits.store(0, std::memory_order_relaxed);  // asked again under the new restriction
  return ok;
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
