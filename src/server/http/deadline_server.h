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

 private:
  bool process_and_close_socket(socket_t sock) override;

  const std::chrono::milliseconds request_deadline_;
  const std::string timeout_response_;
};

}  // namespace g4
