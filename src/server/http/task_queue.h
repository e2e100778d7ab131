// ElasticTaskQueue: cpp-httplib's connection task queue. httplib holds one task per connection
// for its whole keep-alive life and a streaming response holds its thread until generation
// ends, so a fixed pool lets a few streams starve /health. This queue keeps a few resident
// workers and starts burst threads up to a cap (measured in server-api.md §12).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace g4 {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(size_t resident, size_t max_threads);
  ~ElasticTaskQueue() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void Worker();

  const size_t resident_, max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool shutdown_ = false;
};

}  // namespace g4
