// Server: the OpenAI-compatible HTTP front of g4. cpp-httplib (Debian 0.11.4) with TCP_NODELAY,
// an elastic task queue, body and keep-alive limits; routes to the openai layer (parsing,
// validation, response shapes) and the continuous-batching Engine. HTTP threads never run the
// model: they submit a request, then pull its events and write them, cancelling it as soon as
// the client is gone (a failed write, or is_writable() turning false while waiting).
//
// The server listens before the model is ready: /health answers 503 until SetReady(), and
// generation routes answer 503 "loading" until then. Once SetDraining() is called (SIGTERM),
// /health answers 503 "draining" again, so a load balancer or a readiness probe stops sending
// work while the running requests finish.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "chat/chat.h"
#include "core/status.h"
#include "runtime/grammar/grammar.h"
#include "runtime/scheduler/engine.h"
#include "server/metrics.h"
#include "server/openai/request.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

class DeadlineHttpServer;  // server/http/deadline_server.h (keeps httplib.h out of this header)

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;                     // empty: no auth
  size_t max_body_bytes = size_t{32} << 20;
  int max_http_threads = 256;
  // Timeouts. A request (line, headers, body) must arrive within request_timeout_s of its first
  // byte with no pause over read_timeout_s, or it is answered 408 and its connection closed
  // (server/http/deadline_stream.h: cpp-httplib alone only bounds each recv, so a client
  // trickling bytes would hold its thread forever). Writes: a reader stalled for
  // write_timeout_s is cancelled.
  int read_timeout_s = 10;
  int request_timeout_s = 30;
  int write_timeout_s = 30;
};

// What the routes need once the model is loaded.
struct ServingState {
  const Tokenizer* tokenizer = nullptr;
  Engine* engine = nullptr;
  openai::ServerDefaults defaults;
  ChatStyle chat_style;
  // The tokenizer's vocabulary arranged for grammar masks (tools, response_format).
  std::shared_ptr<const grammar::VocabIndex> vocab_index;
  int64_t created = 0;  // unix seconds the model was loaded
};

class Server {
 public:
  Server(ServerOptions options, Metrics* metrics);
  ~Server();

  // Binds host:port (port 0 picks a free one). Error names the address.
  Status Bind();
  int port() const { return port_; }
  // Serves on a background thread until Stop(); returns once the listener runs.
  void Start();
  // Installs the model and starts answering generation requests.
  void SetReady(ServingState state);
  // /health turns 503 "draining"; the engine, shutting down, refuses new requests with 503.
  void SetDraining() { draining_.store(true); }
  // Stops accepting connections and joins the listener (in-flight handlers return first).
  void Stop();

 private:
  void Routes();

  ServerOptions options_;
  Metrics* metrics_;
  std::unique_ptr<DeadlineHttpServer> http_;
  ServingState state_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  int port_ = 0;
  std::thread listener_;
  std::atomic<bool> listener_done_{false};  // listen_after_bind() returned
};

}  // namespace g4
