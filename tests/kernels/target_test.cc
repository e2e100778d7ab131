// g4::cpu::TargetName(): names a real Highway target (never "Unknown"), is stable across calls,
// and is what the cpu backend reports in its policy line.

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "ops/backend.h"

namespace g4 {
namespace {

TEST(TargetNameTest, NamesAKnownTarget) {
  const std::string name = cpu::TargetName();
  const std::set<std::string> known = {"SSSE3", "SSE4", "AVX2", "AVX3", "AVX3_DL", "NEON", "SVE",
                                       "SVE2", "SVE_256", "SVE2_128", "PPC8", "WASM",
                                       "WASM_EMU256", "RVV", "EMU128", "SCALAR"};
  EXPECT_TRUE(known.count(name)) << name;
  EXPECT_EQ(name, cpu::TargetName());
  ::testing::Test::RecordProperty("isa", name);
}

TEST(TargetNameTest, CpuBackendPolicyShowsIt) {
  Backend backend(BackendKind::kCpu, 2);
  EXPECT_NE(backend.PolicyString().find(std::string("isa=") + cpu::TargetName()),
            std::string::npos)
      << backend.PolicyString();
}

}  // namespace
}  // namespace g4
