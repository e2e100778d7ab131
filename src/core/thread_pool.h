// A fixed pool of worker threads for data-parallel loops. The caller's thread takes part in
// every loop, so a pool of N threads starts N-1 workers. One loop runs at a time.
// Hand-offs spin briefly before sleeping: a decode step is ~300-800 short loops (one per op),
// and waking a sleeping thread through the kernel costs tens of microseconds on a VM (2-thread
// E2B W4A16 decode: 7-10 tok/s blocking at once, 12-13 with the spin, back-to-back runs).
// Workers spin ~50 us for the next loop and the caller ~50 us for the last chunk, then block
// on the condition variables.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace g4 {

class ThreadPool {
 public:
  // num_threads <= 0 picks std::thread::hardware_concurrency().
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // Calls fn(begin, end) over [0, n) split into at most size() contiguous chunks of at least
  // `grain` items; returns when every chunk is done.
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t begin, int64_t end)>& fn);

  // As ParallelFor, but [0, n) is cut into up to kPiecesPerThread * size() contiguous pieces of
  // at least `grain` items, which the threads claim as they finish the last: where items cost
  // unequal amounts (causal attention tiles) or a thread is held up, no thread waits for
  // another's whole half. For loops whose pieces cost little to start. A thread may take
  // several pieces, and one thread all of them.
  void ParallelForClaimed(int64_t n, int64_t grain,
                          const std::function<void(int64_t begin, int64_t end)>& fn);
  static constexpr int kPiecesPerThread = 4;

 private:
  void Run(int64_t n, int64_t grain, bool claimed,
           const std::function<void(int64_t, int64_t)>& fn);
  // Claims and runs pieces of loop `count` (of `pieces`) until none is left.
  void RunClaimed(uint64_t count, int pieces);
  void PieceDone();
  void WorkerLoop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  // Only for sleeping: a hand-off between spinning threads takes no lock (an empty 2-thread
  // loop took 1.2 us with the lock on both sides, 0.6 us without; docs/speed.md).
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  // The current loop: written by the caller before it bumps generation_, read after the bump
  // only by the workers that take a chunk. The caller waits for those (pending_), so none reads
  // a field that the next loop rewrites.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  // The loop's count << kChunkBits | whether its pieces are claimed | its number of chunks: a
  // worker without a chunk learns so from the counter alone.
  std::atomic<uint64_t> generation_{0};
  // A claimed loop's count << 32 | its next piece. A worker claims with a compare-exchange that
  // names the count it saw, so one that wakes after its loop has ended claims nothing of the
  // next (whose job_ it would not have read).
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> pending_{0};  // chunks of the current loop not yet done
  // Sleepers announce themselves (seq_cst, then re-check) so that a waker which sees none is
  // certain the sleeper will see its change.
  std::atomic<int> workers_asleep_{0};
  std::atomic<bool> caller_asleep_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace g4
