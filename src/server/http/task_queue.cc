#include "server/http/task_queue.h"

namespace g4 {

ElasticTaskQueue::ElasticTaskQueue(size_t resident, size_t max_threads)
    : resident_(resident), max_threads_(std::max(resident, max_threads)) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < resident_; ++i) threads_.emplace_back([this] { Worker(); });
}

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return;
    jobs_.push_back(std::move(fn));
    // Every job gets a thread at once while below the cap: a waiting connection is a client
    // staring at a silent socket.
    if (idle_ < jobs_.size() && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { Worker(); });
    }
  }
  cv_.notify_one();
}

void ElasticTaskQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_ && threads_.empty()) return;
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void ElasticTaskQueue::Worker() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      cv_.wait(lock, [this] { return shutdown_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // shutting down with nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace g4
