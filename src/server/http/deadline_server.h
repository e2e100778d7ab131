// DeadlineHttpServer: httplib::Server whose connections read requests through
// DeadlineSocketStream, so a whole request (line, headers, body) must arrive within a deadline.
// It replaces httplib's per-connection loop (a private virtual, overridable by design) with the
// same keep-alive rules: up to keep_alive_max_count requests, an idle wait of
// keep_alive_timeout between them, and an end to waiting once the server stops.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace g4 {

class DeadlineHttpServer : public httplib::Server {
 public:
  // `timeout_response`: the complete HTTP response for a request that missed its deadline.
  DeadlineHttpServer(std::chrono::milliseconds request_deadline, std::string timeout_response);

  // Re-listens on the bound socket with a longer accept queue: cpp-httplib 0.11.4 listens with a
  // backlog of 5, so a burst of connections overflows it and the kernel drops SYNs (clients
  // wait 1-3 s for the retransmission). Call after bind_to_port / bind_to_any_port.
  bool SetListenBacklog(int backlog);

  // Serves one accepted connection until it ends, then closes it: what the listener does for
  // each connection (public so that the HTTP fuzz harness can drive a socketpair through it).
  // Needs a bound server (bind_to_port / bind_to_any_port): an unbound one serves nothing.
  bool ServeConnection(socket_t sock) { return process_and_close_socket(sock); }

 private:
  bool process_and_close_socket(socket_t sock) override;

  const std::chrono::milliseconds request_deadline_;
  const std::string timeout_response_;
};

}  // namespace g4
