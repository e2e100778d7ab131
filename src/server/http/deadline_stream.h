// DeadlineSocketStream: cpp-httplib's Stream over one accepted connection, plus a deadline on
// reading each whole request. httplib 0.11.4 times out each recv alone, so a client that
// trickles a byte every few seconds could hold a connection thread for as long as it likes;
// here the request line, headers and body must all arrive within `request` of the request's
// first byte, with no pause longer than `read`. A request that misses either is answered 408
// by the stream itself (httplib's own reply to the broken request is discarded). The deadline
// ends at the first byte of the response: streaming a long answer is not bounded by it.
#pragma once

#include <httplib.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace g4 {

class DeadlineSocketStream : public httplib::Stream {
 public:
  struct Timeouts {
    std::chrono::microseconds read;     // longest pause between bytes
    std::chrono::microseconds write;    // longest wait for a writable socket
    std::chrono::microseconds request;  // whole request, first byte to last
  };

  // `timeout_response` is the complete HTTP response sent when a request times out.
  DeadlineSocketStream(int sock, Timeouts timeouts, std::string timeout_response);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return sock_; }

  // Bytes already received and not yet read (a pipelined next request).
  bool HasBuffered() const { return pos_ < len_; }
  // Arms the deadline: call when the next request's first byte is available.
  void StartRequest();
  // True when the current request timed out; sends the 408 once if nothing answered it yet.
  bool AnswerIfTimedOut();

 private:
  // Waits for input, at most the read timeout and never past the deadline.
  bool WaitReadable() const;
  void SendTimeoutResponse();

  const int sock_;
  const Timeouts timeouts_;
  const std::string timeout_response_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // set while reading a request
  mutable bool timed_out_ = false;
  bool answered_ = false;
  std::array<char, 4096> buf_;
  size_t pos_ = 0, len_ = 0;
};

}  // namespace g4
