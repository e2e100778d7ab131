// Host-pointer versions of the cuda::dev ops (kernels/cuda/kernels.h), for the per-op tests:
// the ops/*.h signatures on host arrays. Each uploads its inputs into device scratch, runs the
// dev op on the open device (a test fixture holds it: cuda_test_util.h), synchronizes and
// copies the result back; after a CUDA failure, or without an open device, its outputs are NaN,
// so a broken device never yields plausible-looking numbers. Weights are host TensorViews, as
// for the dev ops (uploaded once into the device context's cache).
#pragma once

#include <vector>

#include "core/thread_pool.h"
#include "kernels/cuda/kernels.h"
#include "kernels/op_backend.h"

namespace g4::cuda::staged {

// The ops of kernels/cuda/kernels.h (cuda::dev) on host pointers, as an OpTable (no
// pack_weight): e.g. staged::Ops().rms_norm(pool, x, w, R, D, eps, out).
const OpTable& Ops();
// The device as the shared op tests' backend (op_backend.h): opened for each case (skipped
// without a device), closed at its end (its error checked), the weight cache released between
// weights.
std::vector<g4::testing::OpBackend> OpBackends();

}  // namespace g4::cuda::staged
