#include "server/http/deadline_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

namespace g4 {
namespace {

using Clock = std::chrono::steady_clock;

// poll() one event; `wait` rounded up to whole milliseconds. >0 ready, 0 timeout, <0 error.
int PollOne(int sock, short events, std::chrono::microseconds wait) {
  pollfd p{sock, events, 0};
  const int ms = static_cast<int>(std::max<int64_t>(0, (wait.count() + 999) / 1000));
  int r;
  do {
    r = poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  return r;
}

// A peer that closed its end reads as EOF; one with data pending or nothing to say is alive.
bool PeerAlive(int sock) {
  if (PollOne(sock, POLLIN, std::chrono::microseconds(0)) <= 0) return true;
  char c;
  const ssize_t n = recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

void NameOf(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

}  // namespace

DeadlineSocketStream::DeadlineSocketStream(int sock, Timeouts timeouts,
                                           std::string timeout_response)
    : sock_(sock), timeouts_(timeouts), timeout_response_(std::move(timeout_response)) {}

void DeadlineSocketStream::StartRequest() {
  deadline_ = Clock::now() + timeouts_.request;
  timed_out_ = false;
  answered_ = false;
}

bool DeadlineSocketStream::WaitReadable() const {
  auto wait = timeouts_.read;
  if (deadline_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(*deadline_ - Clock::now());
    if (left.count() <= 0) {
      timed_out_ = true;
      return false;
    }
    wait = std::min(wait, left);
  }
  const int r = PollOne(sock_, POLLIN, wait);
  // Silence while a request is being read is a timeout too (the per-read one).
  if (r == 0 && deadline_) timed_out_ = true;
  return r > 0;
}

bool DeadlineSocketStream::is_readable() const { return HasBuffered() || WaitReadable(); }

bool DeadlineSocketStream::is_writable() const {
  return PollOne(sock_, POLLOUT, timeouts_.write) > 0 && PeerAlive(sock_);
}

ssize_t DeadlineSocketStream::read(char* ptr, size_t size) {
  if (!HasBuffered()) {
    if (timed_out_ || !WaitReadable()) return -1;
    // httplib reads request lines a byte at a time: fill the buffer instead of one recv each.
    ssize_t n;
    do {
      n = recv(sock_, buf_.data(), buf_.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    pos_ = 0;
    len_ = static_cast<size_t>(n);
  }
  const size_t n = std::min(size, len_ - pos_);
  std::memcpy(ptr, buf_.data() + pos_, n);
  pos_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t DeadlineSocketStream::write(const char* ptr, size_t size) {
  if (timed_out_) {
    // httplib's reply to a request it could not read in time: ours goes instead.
    SendTimeoutResponse();
    return static_cast<ssize_t>(size);
  }
  // The response has begun, so the request was read: the deadline is over. httplib's interim
  // "100 Continue" comes before the body, which is still to be read under it.
  if (deadline_ && !std::string_view(ptr, size).starts_with("HTTP/1.1 100 ")) deadline_.reset();
  if (!is_writable()) return -1;
  ssize_t n;
  do {
    n = send(sock_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

bool DeadlineSocketStream::AnswerIfTimedOut() {
  if (!timed_out_) return false;
  SendTimeoutResponse();
  return true;
}

void DeadlineSocketStream::SendTimeoutResponse() {
  if (answered_) return;
  answered_ = true;
  size_t sent = 0;
  while (sent < timeout_response_.size() && PollOne(sock_, POLLOUT, timeouts_.write) > 0) {
    const ssize_t n =
        send(sock_, timeout_response_.data() + sent, timeout_response_.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
}

void DeadlineSocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    NameOf(addr, len, ip, port);
  }
}

void DeadlineSocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    NameOf(addr, len, ip, port);
  }
}

}  // namespace g4
