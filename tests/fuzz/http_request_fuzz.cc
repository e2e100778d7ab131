// Fuzzes the HTTP request path g4 owns: DeadlineHttpServer's connection loop (keep-alive,
// pipelining, the whole-request deadline and its 408) reading through DeadlineSocketStream,
// with cpp-httplib's request parsing behind it (the library itself is not instrumented). The
// input is everything a client sends on one connection, written into a socketpair; with no
// keep-alive idle time and a 1 ms read timeout the server serves what is there and ends the
// connection (a half-finished request gets the 408). The client end stays open for writing:
// a peer that shut its side reads as gone, and is not answered. Invariants: the server ends
// the connection; whatever it sent is a sequence of HTTP/1.1 responses, none a 5xx.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "server/http/deadline_server.h"

namespace {

g4::DeadlineHttpServer& Server() {
  static g4::DeadlineHttpServer* server = [] {
    const std::string body = "{\"error\":{\"code\":408}}";
    auto* s = new g4::DeadlineHttpServer(
        std::chrono::milliseconds(200),
        "HTTP/1.1 408 Request Timeout\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n" + body);
    s->set_read_timeout(0, 1000);  // 1 ms: the input is all there or never comes
    s->set_write_timeout(1, 0);
    s->set_keep_alive_timeout(0);
    s->set_payload_max_length(1 << 16);
    s->Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    s->Post("/v1/completions", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    s->Post("/v1/stream", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        sink.write("data: 1\n\n", 9);
        sink.done();
        return true;
      });
    });
    // Bound (not listening) so the connection loop runs: it stops once the server stops.
    if (s->bind_to_any_port("127.0.0.1") <= 0) std::abort();
    return s;
  }();
  return *server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g4::DeadlineHttpServer& server = Server();
  int fds[2];
  G4_FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  const int big = 1 << 20;  // room for all of the input and every reply without a reader
  setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fds[0], data + sent, size - sent, MSG_NOSIGNAL);
    G4_FUZZ_CHECK(n > 0);
    sent += static_cast<size_t>(n);
  }
  server.ServeConnection(fds[1]);  // closes fds[1]
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  // G4_FUZZ_HTTP_ECHO=1 shows the replies (to check the seeds by hand).
  static const bool echo = std::getenv("G4_FUZZ_HTTP_ECHO") != nullptr;
  if (echo) std::fprintf(stderr, "---\n%s\n", out.c_str());
  // Every response the server wrote begins with a status line; none is a server error.
  for (size_t at = out.find("HTTP/1.1 "); at != std::string::npos;
       at = out.find("HTTP/1.1 ", at + 1)) {
    if (at + 12 > out.size()) break;
    G4_FUZZ_CHECK(out[at + 9] != '5');
  }
  if (!out.empty()) G4_FUZZ_CHECK(out.rfind("HTTP/1.1 ", 0) == 0);
  return 0;
}
