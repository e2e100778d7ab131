#include "server/http/deadline_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "server/http/deadline_stream.h"

namespace g4 {
namespace {

using std::chrono::microseconds;

microseconds Micros(time_t sec, time_t usec) {
  return std::chrono::seconds(sec) + microseconds(usec);
}

// Waits for the next request's first byte on an idle keep-alive connection (at least one look,
// so a pipelined request already there is served even with no idle time). Polls in short
// slices so that a stopping server is noticed within one slice.
bool WaitForRequest(int sock, const std::atomic<socket_t>& listener, microseconds idle_limit) {
  const auto until = std::chrono::steady_clock::now() + idle_limit;
  while (listener != INVALID_SOCKET) {
    const int64_t left = std::max<int64_t>(
        0,
        std::chrono::duration_cast<microseconds>(until - std::chrono::steady_clock::now()).count());
    pollfd p{sock, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(100, (left + 999) / 1000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    if (left == 0) return false;
  }
  return false;
}

}  // namespace

DeadlineHttpServer::DeadlineHttpServer(std::chrono::milliseconds request_deadline,
                                       std::string timeout_response)
    : request_deadline_(request_deadline), timeout_response_(std::move(timeout_response)) {}

bool DeadlineHttpServer::SetListenBacklog(int backlog) {
  const socket_t sock = svr_sock_;
  // listen() again on a listening socket only changes its backlog (Linux).
  return sock != INVALID_SOCKET && ::listen(sock, backlog) == 0;
}

bool DeadlineHttpServer::process_and_close_socket(socket_t sock) {
  DeadlineSocketStream strm(sock,
                            {Micros(read_timeout_sec_, read_timeout_usec_),
                             Micros(write_timeout_sec_, write_timeout_usec_), request_deadline_},
                            timeout_response_);
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    if (!strm.HasBuffered() &&
        !WaitForRequest(sock, svr_sock_, std::chrono::seconds(keep_alive_timeout_sec_))) {
      break;
    }
    strm.StartRequest();
    bool closed = false;
    ok = process_request(strm, /*close_connection=*/left == 1, closed, nullptr);
    if (strm.AnswerIfTimedOut()) {
      ok = false;
      break;
    }
    if (!ok || closed) break;
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

}  // namespace g4
