// A CPU stand-in for the CUDA runtime used by run.sh and run_backend.sh (see there): just enough
// of the execution model and the runtime API to run the CUDA backend on a machine without a GPU.
//   - A block's threads are fibers (ucontext) on the launching thread: each runs until it reaches
//     __syncthreads / __syncwarp / a shuffle, and a barrier opens when every thread it waits for
//     is there. Phases alternate the threads' order (ascending, then descending), so a missing
//     barrier shows up as a wrong result whichever thread writes first. A barrier that not every
//     thread reaches (divergent __syncthreads) aborts with a message, where a GPU would hang or
//     compute garbage. Blocks run one after another (so function-static "__shared__" arrays are
//     per block); dynamic shared memory starts as 0xcd garbage, as on a real device.
//   - Device memory is host memory, but the emulator knows every allocation: cudaMalloc fills it
//     with 0xff (NaN as f32) and ends it (rounded up to cudaMalloc's 256-byte alignment) at an
//     inaccessible page, so a kernel running more than 255 bytes past a buffer faults (SIGSEGV)
//     instead of reading a neighbour, and one running less reads NaN; cudaMemcpy checks that the device side of a copy lies inside one
//     allocation and the host side in none, and every pointer argument of a kernel must point
//     into an allocation (a host pointer passed to a kernel is an illegal address on a GPU).
//   - Launch checks as on a device: block size 1..1024, grid limits, and dynamic shared memory
//     above 48 KiB only after cudaFuncSetAttribute(MaxDynamicSharedMemorySize) within the card's
//     opt-in limit; a bad launch sets the error that cudaGetLastError returns, and runs nothing.
//   - Asynchrony as on a device's one in-order stream: kernels, cudaMemsetAsync, cudaFreeAsync
//     and cudaMemcpyAsync whose host side is pinned (cudaMallocHost) are checked when issued but
//     queued, and run only when the host waits: a synchronous cudaMemcpy / cudaMemset / cudaFree,
//     a stream or device synchronize, or cudaEventSynchronize (which runs the queue up to its
//     event's record). So host code that reuses a pinned source, or reads a result, before
//     waiting sees what a GPU would give it. G4_EMU_SYNC=1 runs everything at once instead.
//     Every stream shares that one queue.
//   - Stream capture (thread-local mode) and graphs: work issued to a captured stream is
//     recorded instead of queued, a graph launch queues it; the calls a device refuses during
//     a capture fail and invalidate it (see "stream capture and graphs" at the end, README.md).
// The card (cudaGetDeviceProperties) comes from fake_device.cc.
#pragma once
#include <math.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3 { unsigned x, y, z; };
struct uint4 { unsigned x, y, z, w; };
struct float4 { float x, y, z, w; };
typedef int cudaError_t;
enum : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorIllegalState = 401,
  cudaErrorIllegalAddress = 700,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
};
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
typedef struct CUgraphNode_st* cudaGraphNode_t;
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
enum cudaDeviceAttr { cudaDevAttrMemoryClockRate = 36 };

struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
  size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
  int l2CacheSize, memoryBusWidth, maxThreadsPerBlock, warpSize;
};

// fake_device.cc: the emulated card.
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int ordinal);
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int ordinal);
cudaError_t cudaSetDevice(int ordinal);

namespace emu {

// The card's shared-memory limits (fake_device.cc).
size_t SmemPerBlock();
size_t SmemPerBlockOptin();

inline std::recursive_mutex& Mu() {
  static std::recursive_mutex m;
  return m;
}
inline cudaError_t& LastError() {
  static cudaError_t e = cudaSuccess;
  return e;
}
inline cudaError_t Fail(cudaError_t e, const char* what) {
  std::fprintf(stderr, "[cuda emu] %s\n", what);
  if (LastError() == cudaSuccess) LastError() = e;
  return e;
}

}  // namespace emu

// A captured graph: its nodes (what a launch enqueues, in capture order) and the memory of its
// memory nodes (cudaMallocAsync while capturing), which lives as long as the graph or an
// instance of it.
namespace emu {
struct GraphMem;
}
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
  std::shared_ptr<emu::GraphMem> mem;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
  std::shared_ptr<emu::GraphMem> mem;
};
// A stream: all streams share the one queue below (in order), so a missing order between two
// streams does not show; what a stream has of its own is its capture.
struct CUstream_st {
  cudaGraph_t graph = nullptr;  // the capture in progress, or nullptr
  bool invalidated = false;     // a refused call ended the capture's chance of a graph
};

namespace emu {

// The capture this thread began (thread-local mode, the one the backend uses): while there is
// one, the calls a device refuses during it (cudaMalloc, cudaFree, cudaMallocHost / FreeHost,
// synchronous copies and sets, stream / device / event synchronize) fail with
// cudaErrorStreamCaptureUnsupported and invalidate it.
inline thread_local cudaStream_t t_capture = nullptr;
inline bool RefusedWhileCapturing(const char* what) {
  if (t_capture == nullptr) return false;
  t_capture->invalidated = true;
  std::fprintf(stderr, "[cuda emu] %s during a stream capture: refused, capture invalidated\n",
               what);
  if (LastError() == cudaSuccess) LastError() = cudaErrorStreamCaptureUnsupported;
  return true;
}

// The stream's queued work, in order, each item numbered; RunUntil(n) runs items up to n.
struct Queued {
  uint64_t seq;
  std::function<void()> run;
};
inline std::deque<Queued>& Queue() {
  static std::deque<Queued> q;
  return q;
}
inline uint64_t& LastQueued() {
  static uint64_t n = 0;
  return n;
}
inline bool Deferred() {
  static const bool deferred = std::getenv("G4_EMU_SYNC") == nullptr;
  return deferred;
}
inline void RunUntil(uint64_t seq) {
  std::lock_guard<std::recursive_mutex> lock(Mu());
  while (!Queue().empty() && Queue().front().seq <= seq) {
    std::function<void()> run = std::move(Queue().front().run);
    Queue().pop_front();
    run();
  }
}
inline void Flush() { RunUntil(~uint64_t{0}); }
// Work issued to stream `s`: recorded into the graph while `s` is captured (an error once the
// capture is invalidated), else run now (G4_EMU_SYNC) or queued.
inline cudaError_t Enqueue(cudaStream_t s, std::function<void()> run) {
  std::lock_guard<std::recursive_mutex> lock(Mu());
  if (s != nullptr && s->graph != nullptr) {
    if (s->invalidated) {
      return Fail(cudaErrorStreamCaptureInvalidated, "work issued to an invalidated capture");
    }
    s->graph->nodes.push_back(std::move(run));
    return cudaSuccess;
  }
  if (!Deferred()) {
    run();
    return cudaSuccess;
  }
  Queue().push_back({++LastQueued(), std::move(run)});
  return cudaSuccess;
}
// Pinned host allocations (cudaMallocHost): base -> bytes.
inline std::map<uintptr_t, size_t>& Pinned() {
  static std::map<uintptr_t, size_t> m;
  return m;
}
inline bool InPinned(const void* p, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = Pinned().upper_bound(a);
  if (it == Pinned().begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second;
}
// Event -> the queue position recorded into it.
inline std::map<const void*, uint64_t>& Events() {
  static std::map<const void*, uint64_t> m;
  return m;
}

// Live device allocations: base -> bytes.
inline std::map<uintptr_t, size_t>& Allocs() {
  static std::map<uintptr_t, size_t> m;
  return m;
}
// The mapping behind each allocation (for munmap).
struct Mapping {
  void* base;
  size_t len;
};
inline std::map<uintptr_t, Mapping>& Maps() {
  static std::map<uintptr_t, Mapping> m;
  return m;
}
// Whether [p, p + n) lies inside one device allocation (n = 0: p inside or one past its end).
inline bool InDevice(const void* p, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(Mu());
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = Allocs().upper_bound(a);
  if (it == Allocs().begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second;
}
inline bool AnyDevice(const void* p, size_t n) {
  return n > 0 && (InDevice(p, 1) || InDevice(static_cast<const char*>(p) + n - 1, 1));
}

inline std::map<const void*, int>& MaxDynSmem() {
  static std::map<const void*, int> m;
  return m;
}

// ---- the block scheduler (fibers) ----
enum class St { kRun, kBlockBar, kWarpBar, kDone };
// A fiber is made once (makecontext) and entered once with swapcontext; after that, switches
// are _setjmp/_longjmp (no signal-mask syscall), and a fiber whose thread finished waits at
// kDone to run the next block's thread of the same index.
struct Fiber {
  ucontext_t ctx;
  jmp_buf jb;
  std::unique_ptr<char[]> stack;
  St st = St::kRun;
  bool started = false;
};
inline constexpr size_t kStack = 256 << 10;
struct Sched {
  ucontext_t main;
  jmp_buf main_jb;
  std::vector<std::unique_ptr<Fiber>> f;
  unsigned n = 0, cur = 0;
  void (*body)(void*) = nullptr;
  void* arg = nullptr;
};
inline Sched& S() {
  static Sched s;
  return s;
}

}  // namespace emu

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline float g_shfl[1024];
// 128-byte aligned: with no static __shared__ in a kernel, a device's dynamic shared memory
// starts at the block's shared window, which WMMA's 32-byte alignment rule relies on.
alignas(128) inline unsigned char g_dyn_smem[1 << 20];

namespace emu {
inline void Yield(St st) {
  Sched& s = S();
  const unsigned me = s.cur;
  s.f[me]->st = st;
  if (_setjmp(s.f[me]->jb) == 0) _longjmp(s.main_jb, 1);
  threadIdx = {me, 0, 0};
}
inline void Entry() {
  Sched& s = S();
  for (;;) {
    s.body(s.arg);
    Yield(St::kDone);
  }
}
// Runs fiber t until it yields.
inline void Switch(unsigned t) {
  Sched& s = S();
  s.cur = t;
  threadIdx = {t, 0, 0};
  if (_setjmp(s.main_jb) != 0) return;
  Fiber& f = *s.f[t];
  if (!f.started) {
    f.started = true;
    swapcontext(&s.main, &f.ctx);  // left by _longjmp from Yield, never returns
  } else {
    _longjmp(f.jb, 1);
  }
}

// Runs body(arg) as each of `n` threads of one block.
inline void RunBlock(unsigned n, void (*body)(void*), void* arg, const char* name) {
  Sched& s = S();
  while (s.f.size() < n) {
    auto f = std::make_unique<Fiber>();
    f->stack.reset(new char[kStack]);
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack.get();
    f->ctx.uc_stack.ss_size = kStack;
    f->ctx.uc_link = nullptr;  // Entry never returns
    makecontext(&f->ctx, Entry, 0);
    s.f.push_back(std::move(f));
  }
  s.n = n;
  s.body = body;
  s.arg = arg;
  for (unsigned t = 0; t < n; ++t) s.f[t]->st = St::kRun;
  for (unsigned phase = 0;; ++phase) {
    for (unsigned i = 0; i < n; ++i) {
      const unsigned t = phase % 2 == 0 ? i : n - 1 - i;
      if (s.f[t]->st == St::kRun) Switch(t);
    }
    unsigned done = 0, at_block = 0;
    for (unsigned t = 0; t < n; ++t) {
      done += s.f[t]->st == St::kDone;
      at_block += s.f[t]->st == St::kBlockBar;
    }
    if (done == n) return;
    if (at_block == n) {
      for (unsigned t = 0; t < n; ++t) s.f[t]->st = St::kRun;
      continue;
    }
    bool released = false;
    for (unsigned w0 = 0; w0 < n; w0 += 32) {
      const unsigned w1 = w0 + 32 < n ? w0 + 32 : n;
      bool all = true;
      for (unsigned t = w0; t < w1; ++t) all = all && s.f[t]->st == St::kWarpBar;
      if (!all) continue;
      for (unsigned t = w0; t < w1; ++t) s.f[t]->st = St::kRun;
      released = true;
    }
    if (released) continue;
    std::fprintf(stderr,
                 "[cuda emu] %s: block (%u,%u,%u) deadlocks: %u of %u threads exited, %u wait at "
                 "__syncthreads, the rest at __syncwarp / a shuffle (divergent barrier)\n",
                 name, blockIdx.x, blockIdx.y, blockIdx.z, done, n, at_block);
    std::abort();
  }
}

template <typename T>
bool ArgOk(const T& a) {
  if constexpr (std::is_pointer_v<T>) {
    return a == nullptr || InDevice(a, 0);
  } else {
    return true;
  }
}

}  // namespace emu

inline void __syncthreads() { emu::Yield(emu::St::kBlockBar); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::Yield(emu::St::kWarpBar); }
inline int g_sync_pred[1024];
// A barrier that also returns whether `pred` was nonzero in any thread of the block. The second
// barrier keeps a thread's next call from overwriting a predicate another has yet to read.
inline int __syncthreads_or(int pred) {
  g_sync_pred[threadIdx.x] = pred;
  __syncthreads();
  int any = 0;
  for (unsigned t = 0; t < blockDim.x; ++t) any |= g_sync_pred[t] != 0;
  __syncthreads();
  return any;
}
inline float __shfl_xor_sync(unsigned, float v, int mask) {
  const unsigned t = threadIdx.x;
  g_shfl[t] = v;
  __syncwarp();
  const float r = g_shfl[(t / 32) * 32 + ((t % 32) ^ static_cast<unsigned>(mask))];
  __syncwarp();
  return r;
}
inline float __uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline void __trap() { std::abort(); }
// Blocks run one after another and a block's threads never at once: an atomic is a plain
// read-modify-write, a fence orders nothing more, an L2 load is a load.
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline void __threadfence() {}
inline float __ldcg(const float* p) { return *p; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
// Round-to-nearest arithmetic the device never contracts into an FMA.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }

// Programmatic dependent launch (PDL): kernels run one after another here, so the wait has
// nothing to wait for; what is checked is the contract g4 relies on: a kernel launched with the
// attribute calls cudaGridDependencySynchronize in every thread of every block (so none reads
// its inputs, and no grid completes, before its predecessor has), and only on a card of
// cc >= 9.0 (the policy's pdl=on).
inline unsigned g_pdl_waits;  // calls in the block running now
inline void cudaGridDependencySynchronize() { ++g_pdl_waits; }
inline void cudaTriggerProgrammaticLaunchCompletion() {}
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
union cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};

namespace emu {
template <typename... KArgs, typename... Args>
void Launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            bool pdl, Args... args) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  const void* key = reinterpret_cast<const void*>(k);
  if (block.x == 0 || block.x > 1024 || block.y != 1 || block.z != 1) {
    emu::Fail(cudaErrorInvalidConfiguration, "launch: block size outside 1..1024 (or not 1-D)");
    return;
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
      grid.z > 65535) {
    emu::Fail(cudaErrorInvalidConfiguration, "launch: grid outside the device limits");
    return;
  }
  if (smem > emu::SmemPerBlock()) {
    auto it = emu::MaxDynSmem().find(key);
    if (it == emu::MaxDynSmem().end() || smem > static_cast<size_t>(it->second)) {
      emu::Fail(cudaErrorInvalidValue,
                "launch: dynamic shared memory above 48 KiB without a large enough "
                "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
      return;
    }
  }
  if (smem > sizeof(g_dyn_smem)) std::abort();
  if (!(emu::ArgOk(args) && ...)) {
    emu::Fail(cudaErrorIllegalAddress, "launch: a pointer argument is not device memory");
    return;
  }
  // The arguments converted to the kernel's parameter types, as a launch does; the kernel runs
  // when the host next waits for the stream.
  std::tuple<std::decay_t<KArgs>...> params(args...);
  emu::Enqueue(stream, [k, grid, block, smem, pdl, params]() mutable {
    struct Call {
      void (*k)(KArgs...);
      std::tuple<std::decay_t<KArgs>...>* p;
    } call{k, &params};
    auto body = [](void* c) {
      auto* cl = static_cast<Call*>(c);
      std::apply(cl->k, *cl->p);
    };
    blockDim = block;
    gridDim = grid;
    for (unsigned bz = 0; bz < grid.z; ++bz)
      for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
          std::memset(g_dyn_smem, 0xcd, smem);  // garbage, like real smem
          blockIdx = {bx, by, bz};
          g_pdl_waits = 0;
          emu::RunBlock(block.x, body, &call, "kernel");
          if (pdl && g_pdl_waits < block.x) {
            std::fprintf(stderr,
                         "[cuda emu] kernel launched with programmatic dependent launch: block "
                         "(%u,%u,%u) called cudaGridDependencySynchronize in %u of %u threads\n",
                         bx, by, bz, g_pdl_waits, block.x);
            std::abort();
          }
        }
  });
}
}  // namespace emu

template <typename... KArgs, typename... Args>
void EmuLaunch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
               Args... args) {
  emu::Launch(k, grid, block, smem, stream, /*pdl=*/false, args...);
}

template <typename... KArgs, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* c, void (*k)(KArgs...), Args... args) {
  bool pdl = false;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    if (c->attrs[i].id != cudaLaunchAttributeProgrammaticStreamSerialization) {
      return emu::Fail(cudaErrorInvalidValue, "cudaLaunchKernelEx: an attribute not emulated");
    }
    pdl = pdl || c->attrs[i].val.programmaticStreamSerializationAllowed != 0;
  }
  cudaDeviceProp p;
  if (pdl && (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major < 9)) {
    return emu::Fail(cudaErrorInvalidValue,
                     "cudaLaunchKernelEx: programmatic dependent launch below cc 9.0");
  }
  emu::Launch(k, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->stream, pdl, args...);
  return emu::LastError();
}

inline cudaError_t cudaGetLastError() {
  const cudaError_t e = emu::LastError();
  emu::LastError() = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return emu::LastError(); }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  }
  return "cudaErrorUnknown";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "emulated CUDA error (see the [cuda emu] line above)";
}
template <typename K>
cudaError_t cudaFuncSetAttribute(K k, cudaFuncAttribute, int v) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (v < 0 || static_cast<size_t>(v) > emu::SmemPerBlockOptin()) {
    return emu::Fail(cudaErrorInvalidValue,
                     "cudaFuncSetAttribute: MaxDynamicSharedMemorySize above the card's opt-in");
  }
  emu::MaxDynSmem()[reinterpret_cast<const void*>(k)] = v;
  return cudaSuccess;
}

inline cudaError_t EmuMallocNow(void** p, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  *p = nullptr;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = n > 0 ? (n + 255) / 256 * 256 : 256;
  const size_t data = (rounded + page - 1) / page * page;
  void* base = mmap(nullptr, data + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (base == MAP_FAILED) return emu::Fail(cudaErrorMemoryAllocation, "cudaMalloc: out of memory");
  mprotect(static_cast<char*>(base) + data, page, PROT_NONE);  // the guard page
  *p = static_cast<char*>(base) + data - rounded;
  std::memset(*p, 0xff, rounded);  // NaN as f32: reading memory nobody wrote shows
  emu::Allocs()[reinterpret_cast<uintptr_t>(*p)] = n;
  emu::Maps()[reinterpret_cast<uintptr_t>(*p)] = {base, data + page};
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = nullptr;
  if (emu::RefusedWhileCapturing("cudaMalloc")) return cudaErrorStreamCaptureUnsupported;
  return EmuMallocNow(p, n);
}
// Frees now (cudaFree waits for the device: the queued work runs first).
inline cudaError_t EmuFreeNow(void* p) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (p == nullptr) return cudaSuccess;
  auto it = emu::Allocs().find(reinterpret_cast<uintptr_t>(p));
  if (it == emu::Allocs().end()) {
    return emu::Fail(cudaErrorInvalidValue, "cudaFree: not a live device allocation");
  }
  emu::Allocs().erase(it);
  const auto m = emu::Maps().extract(reinterpret_cast<uintptr_t>(p));
  munmap(m.mapped().base, m.mapped().len);
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  if (emu::RefusedWhileCapturing("cudaFree")) return cudaErrorStreamCaptureUnsupported;
  emu::Flush();
  return EmuFreeNow(p);
}
namespace emu {
// The allocations of a graph's memory nodes, freed with the last of the graph and its instances
// (on a device they come from the graph's pool; the addresses stay fixed across launches).
struct GraphMem {
  std::vector<void*> ptrs;
  bool Owns(const void* p) const {
    for (void* q : ptrs) {
      if (q == p) return true;
    }
    return false;
  }
  ~GraphMem() {
    for (void* q : ptrs) EmuFreeNow(q);
  }
};
}  // namespace emu
// Stream-ordered allocation. While `s` is captured: a memory node, whose memory is allocated now
// and kept by the graph; each launch refills it with NaN bytes (memory nobody wrote).
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (s == nullptr || s->graph == nullptr) return cudaMalloc(p, n);
  *p = nullptr;
  if (s->invalidated) {
    return emu::Fail(cudaErrorStreamCaptureInvalidated, "cudaMallocAsync: invalidated capture");
  }
  if (const cudaError_t e = EmuMallocNow(p, n); e != cudaSuccess) return e;
  if (s->graph->mem == nullptr) s->graph->mem = std::make_shared<emu::GraphMem>();
  s->graph->mem->ptrs.push_back(*p);
  void* q = *p;
  const size_t rounded = n > 0 ? (n + 255) / 256 * 256 : 256;
  s->graph->nodes.push_back([q, rounded] { std::memset(q, 0xff, rounded); });
  return cudaSuccess;
}
// Pinned host memory: host memory the emulator knows, so copies from it can stay queued.
inline cudaError_t cudaMallocHost(void** p, size_t n) {
  if (emu::RefusedWhileCapturing("cudaMallocHost")) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  *p = std::malloc(n > 0 ? n : 1);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  emu::Pinned()[reinterpret_cast<uintptr_t>(*p)] = n;
  return cudaSuccess;
}
inline cudaError_t cudaFreeHost(void* p) {
  if (emu::RefusedWhileCapturing("cudaFreeHost")) return cudaErrorStreamCaptureUnsupported;
  emu::Flush();
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  emu::Pinned().erase(reinterpret_cast<uintptr_t>(p));
  std::free(p);
  return cudaSuccess;
}
// While `s` is captured: a free node, which only frees memory of the same graph's memory nodes
// here (the memory stays with the graph); freeing other memory in a graph is not emulated.
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (p != nullptr && emu::Allocs().count(reinterpret_cast<uintptr_t>(p)) == 0) {
    return emu::Fail(cudaErrorInvalidValue, "cudaFreeAsync: not a live device allocation");
  }
  if (s != nullptr && s->graph != nullptr && !s->invalidated) {
    if (p != nullptr && (s->graph->mem == nullptr || !s->graph->mem->Owns(p))) {
      s->invalidated = true;
      return emu::Fail(cudaErrorStreamCaptureUnsupported,
                       "cudaFreeAsync while capturing of memory the capture did not allocate "
                       "(not emulated)");
    }
    return emu::Enqueue(s, [] {});
  }
  return emu::Enqueue(s, [p] { EmuFreeNow(p); });
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s = nullptr) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (n > 0 && !emu::InDevice(p, n)) {
    return emu::Fail(cudaErrorInvalidValue, "cudaMemset: range outside a device allocation");
  }
  return emu::Enqueue(s, [p, v, n] { std::memset(p, v, n); });
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  if (emu::RefusedWhileCapturing("cudaMemset")) return cudaErrorStreamCaptureUnsupported;
  const cudaError_t e = cudaMemsetAsync(p, v, n);
  emu::Flush();
  return e;
}
// Checks a copy's ranges against its kind; false (the error set) when they do not match.
inline bool EmuCopyOk(void* d, const void* s, size_t n, cudaMemcpyKind kind) {
  const bool d_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool s_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault &&
      (d_dev != emu::InDevice(d, n) || (!d_dev && emu::AnyDevice(d, n)) ||
       s_dev != emu::InDevice(s, n) || (!s_dev && emu::AnyDevice(s, n)))) {
    emu::Fail(cudaErrorInvalidValue,
              "cudaMemcpy: a range is not (wholly) in the memory its kind names");
    return false;
  }
  return true;
}
// Waits for the queued work, then copies (from pageable memory a GPU does the same).
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind kind) {
  if (emu::RefusedWhileCapturing("cudaMemcpy")) return cudaErrorStreamCaptureUnsupported;
  if (n == 0) return cudaSuccess;
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (!EmuCopyOk(d, s, n, kind)) return cudaErrorInvalidValue;
  emu::Flush();
  std::memmove(d, s, n);
  return cudaSuccess;
}
// Queued when its host side is pinned (or there is none); a pageable host side is copied
// before the call returns, as the CUDA runtime stages it (a synchronous copy: refused while
// this thread captures).
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k,
                                   cudaStream_t stream = nullptr) {
  if (n == 0) return cudaSuccess;
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (!EmuCopyOk(d, s, n, k)) return cudaErrorInvalidValue;
  const bool queued = (k == cudaMemcpyDeviceToDevice) ||
                      (k == cudaMemcpyHostToDevice && emu::InPinned(s, n)) ||
                      (k == cudaMemcpyDeviceToHost && emu::InPinned(d, n));
  if (!queued) return cudaMemcpy(d, s, n, k);
  return emu::Enqueue(stream, [d, s, n] { std::memmove(d, s, n); });
}
// Kernels run at launch, so there is nothing to wait for; launch errors come from
// cudaGetLastError, as on a device.
inline cudaError_t cudaDeviceSynchronize() {
  if (emu::RefusedWhileCapturing("cudaDeviceSynchronize")) return cudaErrorStreamCaptureUnsupported;
  emu::Flush();
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  if (emu::RefusedWhileCapturing("cudaStreamSynchronize")) return cudaErrorStreamCaptureUnsupported;
  emu::Flush();
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st;
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (s == nullptr) return emu::Fail(cudaErrorInvalidValue, "cudaStreamDestroy: null stream");
  if (s->graph != nullptr) {
    return emu::Fail(cudaErrorIllegalState, "cudaStreamDestroy: the stream is being captured");
  }
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = reinterpret_cast<cudaEvent_t>(new char);
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (s != nullptr && s->graph != nullptr) {  // legal on a device (an event node)
    s->invalidated = true;
    return emu::Fail(cudaErrorStreamCaptureUnsupported,
                     "cudaEventRecord on a captured stream (not emulated)");
  }
  emu::Events()[e] = emu::LastQueued();
  return cudaSuccess;
}
// Runs the queue up to the event's record (an event never recorded is complete).
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (emu::RefusedWhileCapturing("cudaEventSynchronize")) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  auto it = emu::Events().find(e);
  if (it != emu::Events().end()) emu::RunUntil(it->second);
  return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 1;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  emu::Events().erase(e);
  delete reinterpret_cast<char*>(e);
  return cudaSuccess;
}

// ---- stream capture and graphs ----
// Capture records the work issued to the stream (kernels with their arguments by value, async
// copies / sets, memory nodes) instead of queueing it; a graph launch queues the recorded work
// on the launch stream, in order. Only the capturing thread's refused calls invalidate a capture
// (cudaStreamCaptureModeThreadLocal, whatever mode is asked for).
inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (s == nullptr) {
    return emu::Fail(cudaErrorStreamCaptureUnsupported,
                     "cudaStreamBeginCapture: the legacy default stream cannot be captured");
  }
  if (s->graph != nullptr) {
    return emu::Fail(cudaErrorIllegalState, "cudaStreamBeginCapture: already capturing");
  }
  s->graph = new CUgraph_st;
  s->invalidated = false;
  emu::t_capture = s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  *g = nullptr;
  if (s == nullptr || s->graph == nullptr) {
    return emu::Fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not capturing");
  }
  cudaGraph_t graph = s->graph;
  const bool invalidated = s->invalidated;
  s->graph = nullptr;
  s->invalidated = false;
  if (emu::t_capture == s) emu::t_capture = nullptr;
  if (invalidated) {
    delete graph;
    return emu::Fail(cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture: invalidated");
  }
  *g = graph;
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  *status = s == nullptr || s->graph == nullptr ? cudaStreamCaptureStatusNone
            : s->invalidated                    ? cudaStreamCaptureStatusInvalidated
                                                : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
inline cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  if (g == nullptr || n == nullptr) {
    return emu::Fail(cudaErrorInvalidValue, "cudaGraphGetNodes: null graph");
  }
  if (nodes != nullptr) {
    return emu::Fail(cudaErrorInvalidValue, "cudaGraphGetNodes: node handles not emulated");
  }
  *n = g->nodes.size();
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g,
                                        unsigned long long = 0) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  *e = nullptr;
  if (g == nullptr) return emu::Fail(cudaErrorInvalidValue, "cudaGraphInstantiate: null graph");
  *e = new CUgraphExec_st{g->nodes, g->mem};
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  if (e == nullptr) return emu::Fail(cudaErrorInvalidValue, "cudaGraphLaunch: null graph");
  for (const std::function<void()>& node : e->nodes) {
    if (const cudaError_t r = emu::Enqueue(s, node); r != cudaSuccess) return r;
  }
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  std::lock_guard<std::recursive_mutex> lock(emu::Mu());
  delete g;
  return cudaSuccess;
}
