// The backends the shared op tests run on. An op's test body is written once, against an
// OpTable of host-pointer ops (`tests/kernels/<op>_test.h`, a TEST_P on OpBackendTest), and
// each test binary instantiates it over its backends: the CPU kernel tests over the CPU table x
// the Highway targets this machine runs x pools of 1 and 3 threads (CpuOpBackends below), the
// CUDA tests over the device through its host-pointer adapter (tests/kernels/cuda: opened per
// case, skipped without one, emulated in CI). The ref kernels are the oracle of every case.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4::testing {

struct OpBackend {
  std::string name;              // the test-name part: "threads3_AVX2", "cuda"
  const OpTable* ops = nullptr;  // host-pointer ops
  int threads = 1;
  std::string target;  // cpu: the Highway target pinned for each case ("" none)
  // CUDA: the kernels sum in another order than the CPU's (tree reductions, f32 tanhf / expf),
  // so the bodies allow them their own tolerances.
  bool device = false;
  // device: opens it for a case; "" when it runs, else why it cannot (the case skips).
  std::function<std::string()> open;
  // device: closes it at the case's end; "" or the CUDA failure recorded meanwhile.
  std::function<std::string()> close;
  // Between the weights of one case that die: the device's weight cache is keyed by address.
  std::function<void()> weight_died;
};

// The CPU table on every Highway target this machine runs, on pools of 1 and 3 threads.
inline std::vector<OpBackend> CpuOpBackends() {
  std::vector<OpBackend> out;
  for (int threads : {1, 3}) {
    for (const std::string& target : Targets()) {
      OpBackend b;
      b.name = ParamPart(threads) + "_" + ParamPart(target);  // as ParamNames writes them
      b.ops = &GetOpTable(BackendKind::kCpu);
      b.threads = threads;
      b.target = target;
      out.push_back(std::move(b));
    }
  }
  return out;
}

// gtest prints a case's parameter by its name.
inline void PrintTo(const OpBackend& b, std::ostream* os) { *os << b.name; }

inline std::string OpBackendName(const ::testing::TestParamInfo<OpBackend>& info) {
  return info.param.name;
}

class OpBackendTest : public ::testing::TestWithParam<OpBackend> {
 protected:
  void SetUp() override {
    const OpBackend& b = GetParam();
    if (!b.target.empty()) {
      target_ = std::make_unique<ScopedTarget>(b.target);
      ASSERT_TRUE(target_->ok()) << b.target;
    }
    if (b.open) {
      const std::string why = b.open();
      if (!why.empty()) GTEST_SKIP() << b.name << " cannot run here: " << why;
    }
    pool_ = std::make_unique<ThreadPool>(b.threads);
  }
  void TearDown() override {
    if (IsSkipped() || !GetParam().close) return;
    const std::string error = GetParam().close();
    EXPECT_EQ(error, "") << GetParam().name;
  }

  const OpBackend& backend() const { return GetParam(); }
  const OpTable& ops() const { return *GetParam().ops; }
  ThreadPool& pool() { return *pool_; }
  // A case calls this after a weight it ran dies, before the next is made.
  void WeightDied() const {
    if (GetParam().weight_died) GetParam().weight_died();
  }

 private:
  std::unique_ptr<ScopedTarget> target_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace g4::testing
