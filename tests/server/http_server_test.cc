// The HTTP glue (server/server.cc) in-process, with a tiny random model and a byte tokenizer:
// concurrent streams beside a client that leaves mid-stream and a /metrics poller (the case
// the tsan stage of scripts/test.sh exists for), a silent half-sent request dropped after the
// read timeout, requests trickled past the whole-request deadline (408), keep-alive requests
// each with their own deadline, a slow stream outliving the deadline, and shutdown with streams
// in flight.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/temp_path.h"
#include "model/registry.h"
#include "runtime/scheduler/engine.h"
#include "server/metrics.h"
#include "server/server.h"
#include "synthetic/gemma4.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = testing::ProcessTempPath("g4_http_tiny");
    if (!fs::exists(dir / "config.json")) {
      SyntheticOptions o;
      o.preset = "tiny";
      o.dtype = DType::kBF16;
      o.seed = 5;
      ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
    }
    auto m = LoadCausalLM(dir.string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m);
    // Bytes only: sampled ids past 255 decode to nothing, which the stream tolerates.
    auto t = Tokenizer::FromJsonText(tokenizer_test::MakeTokenizerJson({}, {}), "bytes");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tokenizer_ = std::move(*t);
    backend_ = std::make_unique<Backend>(BackendKind::kCpu, 1);
    EngineOptions eo;
    eo.max_batch = 3;
    eo.max_waiting = 8;
    eo.ctx_size = 256;
    engine_ = std::make_unique<Engine>(*model_, *backend_, tokenizer_.get(), eo);
    engine_->Start();
    ServerOptions so;
    so.port = 0;
    so.read_timeout_s = 1;
    so.request_timeout_s = kRequestTimeoutS;
    server_ = std::make_unique<Server>(so, &metrics_);
    ASSERT_TRUE(server_->Bind().ok());
    server_->Start();
    ServingState st;
    st.tokenizer = tokenizer_.get();
    st.engine = engine_.get();
    st.defaults.model_name = "tiny";
    st.defaults.max_model_len = eo.ctx_size;
    server_->SetReady(st);
  }

  void TearDown() override {
    if (engine_) engine_->Shutdown(0ms);
    if (server_) server_->Stop();
  }

  static constexpr int kRequestTimeoutS = 2;

  // A raw connection to the server (the tests below need byte-level control).
  int Connect() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }

  // Sends `head`, then one byte every 250 ms (well inside the 1 s read timeout) until the
  // server answers or 20 s pass. Returns what the server sent; `*waited` is the seconds until
  // its answer arrived.
  static std::string Trickle(int fd, const std::string& head, double* waited) {
    const auto t0 = std::chrono::steady_clock::now();
    send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::string got;
    while (std::chrono::steady_clock::now() - t0 < 20s) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 250) > 0) {
        char buf[1024];
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (!got.empty()) break;  // answered, and nothing more is coming
      send(fd, "a", 1, MSG_NOSIGNAL);
    }
    *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return got;
  }

  // A streaming completion of prompt ids with one logprobs chunk per token.
  static std::string Body(int salt, int max_tokens) {
    return R"({"prompt":[2,)" + std::to_string(10 + salt) + "," + std::to_string(40 + salt) +
           R"(],"max_tokens":)" + std::to_string(max_tokens) +
           R"(,"ignore_eos":true,"temperature":0,"logprobs":0,"stream":true})";
  }

  // Streams one request; returns the body read (stops reading after `stop_after` chunks).
  std::string Stream(int salt, int max_tokens, int stop_after = -1) {
    httplib::Client cli("127.0.0.1", server_->port());
    cli.set_read_timeout(60, 0);
    std::string got;
    int chunks = 0;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = Body(salt, max_tokens);
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      got.append(data, n);
      return stop_after < 0 || ++chunks < stop_after;
    };
    cli.send(req);
    return got;
  }

  int64_t Count(const std::string& text, const std::string& what) {
    int64_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  std::unique_ptr<CausalLM> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Engine> engine_;
  Metrics metrics_{"tiny"};
  std::unique_ptr<Server> server_;
};

TEST_F(HttpServerTest, ConcurrentStreamsWithADepartingClientAndAMetricsPoller) {
  std::atomic<bool> done{false};
  std::thread poller([&] {
    httplib::Client cli("127.0.0.1", server_->port());
    while (!done.load()) {
      auto r = cli.Get("/metrics");
      EXPECT_TRUE(r && r->status == 200);
      std::this_thread::sleep_for(5ms);
    }
  });
  std::vector<std::string> bodies(5);
  std::vector<std::thread> clients;
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back([&, i] { bodies[i] = Stream(i, 12); });
  }
  std::string left = Stream(9, 200, /*stop_after=*/2);  // leaves after two chunks
  for (auto& t : clients) t.join();
  done.store(true);
  poller.join();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Count(bodies[i], "\"logprobs\":{"), 12) << bodies[i];
    EXPECT_THAT(bodies[i], ::testing::HasSubstr("data: [DONE]"));
  }
  EXPECT_THAT(left, ::testing::Not(::testing::HasSubstr("[DONE]")));
  // The departed client's request is cancelled and everything is freed.
  EngineStats st;
  for (int i = 0; i < 200; ++i) {
    st = engine_->Stats();
    if (st.running == 0 && st.kv_blocks_in_use == 0) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.waiting, 0);
  EXPECT_EQ(st.kv_blocks_in_use, 0);
  EXPECT_EQ(st.kv_bytes_in_use, 0);
}

// A second server on a port a g4 server holds fails with the address (without SO_REUSEPORT),
// instead of binding too and silently taking half of the connections.
TEST_F(HttpServerTest, ASecondServerOnTheSamePortFailsToBind) {
  Metrics metrics("second");
  ServerOptions so;
  so.port = server_->port();
  Server second(so, &metrics);
  const Status st = second.Bind();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(),
              ::testing::HasSubstr("cannot bind 127.0.0.1:" + std::to_string(server_->port())));
}

// A port past 16 bits is refused, not truncated to another port.
TEST_F(HttpServerTest, APortOutsideSixteenBitsIsRefused) {
  Metrics metrics("wide");
  for (int port : {65536, 99999, -1}) {
    ServerOptions so;
    so.port = port;
    Server s(so, &metrics);
    const Status st = s.Bind();
    ASSERT_FALSE(st.ok()) << port;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), ::testing::HasSubstr(std::to_string(port) + " is outside 0..65535"));
  }
}

// Stop() right after Start() must not wait forever: httplib's stop() is a no-op until its
// listener runs, so Start() returns only once it does (ASan's slow thread start exposed it).
TEST(HttpServerStopTest, StopRightAfterStartReturns) {
  Metrics metrics("quick");
  for (int i = 0; i < 50; ++i) {
    ServerOptions so;
    so.port = 0;
    Server s(so, &metrics);
    ASSERT_TRUE(s.Bind().ok());
    s.Start();
    s.Stop();
  }
}

// n choices: n sequences in the engine, every index once, usage counting each choice's
// tokens; streamed, each index gets its chunks and its own finish; a client leaving frees all.
TEST_F(HttpServerTest, SeveralChoicesStreamedAndWhole) {
  httplib::Client cli("127.0.0.1", server_->port());
  auto r = cli.Post("/v1/completions",
                    R"({"prompt":[5,6,7],"n":4,"max_tokens":5,"temperature":0,"ignore_eos":true})",
                    "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto body = nlohmann::json::parse(r->body);
  ASSERT_EQ(body["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], i);
    EXPECT_EQ(body["choices"][i]["text"], body["choices"][0]["text"]) << "greedy: equal answers";
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(body["usage"]["completion_tokens"], 20);
  EXPECT_EQ(body["g4"]["choices"].size(), 4u);

  r = cli.Post("/v1/completions",
               R"({"prompt":[5,6,7],"n":3,"max_tokens":4,"temperature":1,"seed":3,)"
               R"("ignore_eos":true,"logprobs":0,"stream":true})",
               "application/json");
  ASSERT_TRUE(r);
  int tokens[3] = {0, 0, 0}, finishes[3] = {0, 0, 0};
  size_t at = 0;
  while ((at = r->body.find("data: {", at)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", at);
    const auto chunk = nlohmann::json::parse(r->body.substr(at + 6, end - at - 6));
    at = end;
    const auto& c = chunk["choices"][0];
    const int i = c["index"].get<int>();
    ASSERT_TRUE(i >= 0 && i < 3) << chunk.dump();
    if (c["finish_reason"].is_string()) {
      ++finishes[i];
    } else if (c["logprobs"].is_object()) {
      EXPECT_EQ(finishes[i], 0) << "a token after its choice finished";
      tokens[i] += static_cast<int>(c["logprobs"]["token_logprobs"].size());
    }
  }
  EXPECT_THAT(tokens, ::testing::ElementsAre(4, 4, 4));
  EXPECT_THAT(finishes, ::testing::ElementsAre(1, 1, 1));
  EXPECT_THAT(r->body, ::testing::HasSubstr("data: [DONE]"));
  r = cli.Post("/v1/completions", R"({"prompt":[5],"n":17})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, ::testing::HasSubstr("n must be in [1, 16]"));
}

// Prefix reuse through the API: the same prompt again is served from the kept cache, and
// usage.prompt_tokens_details.cached_tokens says so (streamed usage too).
TEST_F(HttpServerTest, PromptSentTwiceReportsItsCachedTokens) {
  httplib::Client cli("127.0.0.1", server_->port());
  std::string ids = "2";
  for (int i = 0; i < 39; ++i) ids += "," + std::to_string(10 + (i * 7) % 200);
  const std::string body = R"({"prompt":[)" + ids + R"(],"max_tokens":3,"temperature":0})";
  auto first = cli.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const auto u1 = nlohmann::json::parse(first->body)["usage"];
  EXPECT_EQ(u1["prompt_tokens"], 40);
  EXPECT_EQ(u1["prompt_tokens_details"]["cached_tokens"], 0);
  auto second = cli.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(second);
  const auto j2 = nlohmann::json::parse(second->body);
  EXPECT_EQ(j2["usage"]["prompt_tokens_details"]["cached_tokens"], 40);
  EXPECT_EQ(j2["choices"][0]["text"], nlohmann::json::parse(first->body)["choices"][0]["text"]);
  const std::string streamed = R"({"prompt":[)" + ids + R"(],"max_tokens":3,"temperature":0,)"
                               R"("stream":true,"stream_options":{"include_usage":true}})";
  auto third = cli.Post("/v1/completions", streamed, "application/json");
  ASSERT_TRUE(third);
  EXPECT_THAT(third->body, ::testing::HasSubstr(R"("prompt_tokens_details":{"cached_tokens":40})"));
}

// A route's own 404 (an unknown model) keeps its message; only an unrouted path is "no route".
TEST_F(HttpServerTest, NotFoundSaysWhatWasNotFound) {
  httplib::Client cli("127.0.0.1", server_->port());
  auto r = cli.Post("/v1/completions", R"({"model":"other","prompt":"x","max_tokens":1})",
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, ::testing::HasSubstr("The model `other` does not exist."));
  r = cli.Get("/v2/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, ::testing::HasSubstr("no route GET /v2/nothing"));
}

// A model with no chat template (the Gemma 3 270M base GGUF) serves completions; chat requests
// get a 400 that says why, never a 500 or a prompt in the wrong format.
TEST_F(HttpServerTest, ChatWithoutATemplateIsABadRequest) {
  Metrics metrics("plain");
  ServerOptions so;
  so.port = 0;
  Server server(so, &metrics);
  ASSERT_TRUE(server.Bind().ok());
  server.Start();
  ServingState st;
  st.tokenizer = tokenizer_.get();
  st.engine = engine_.get();
  st.defaults.model_name = "plain";
  st.defaults.max_model_len = 256;
  st.chat_style.format = ChatFormat::kNone;
  st.chat_style.source = "plain.gguf (no tokenizer.chat_template)";
  server.SetReady(st);
  httplib::Client cli("127.0.0.1", server.port());
  auto r = cli.Post("/v1/chat/completions",
                    R"({"model":"plain","messages":[{"role":"user","content":"hi"}]})",
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, ::testing::HasSubstr("no chat template"));
  EXPECT_THAT(r->body, ::testing::HasSubstr("/v1/completions"));
  r = cli.Post("/v1/completions", R"({"model":"plain","prompt":[2,17],"max_tokens":2})",
               "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  server.Stop();
}

TEST_F(HttpServerTest, HalfSentRequestIsDroppedAfterTheReadTimeout) {
  const int fd = Connect();
  const std::string part =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"pro";
  ASSERT_EQ(write(fd, part.data(), part.size()), static_cast<ssize_t>(part.size()));
  const auto t0 = std::chrono::steady_clock::now();
  // Meanwhile others are served.
  httplib::Client cli("127.0.0.1", server_->port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  char buf[1024];
  // Returns when the server gives up: its 408 for the request it could not read in time.
  const ssize_t n = read(fd, buf, sizeof buf);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  const std::string answer(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << answer;
  EXPECT_THAT(answer, ::testing::HasSubstr("no pause over 1 s"));
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 10.0);
}

TEST_F(HttpServerTest, TrickledHeadersAreCutAtTheRequestDeadline) {
  const int fd = Connect();
  double waited = 0;
  const std::string answer =
      Trickle(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ", &waited);
  close(fd);
  // Every byte came inside the read timeout, so only the whole-request deadline can end it.
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << answer;
  EXPECT_THAT(answer, ::testing::HasSubstr("\"message\":\"The request did not arrive in time"));
  EXPECT_GE(waited, kRequestTimeoutS - 0.1);
  EXPECT_LT(waited, 19.0);  // the trickle would have gone on for 20 s
}

TEST_F(HttpServerTest, TrickledBodyIsCutAtTheRequestDeadline) {
  const int fd = Connect();
  double waited = 0;
  const std::string answer = Trickle(
      fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", &waited);
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << answer;
  EXPECT_EQ(Count(answer, "HTTP/1.1"), 1) << "httplib's own reply must be replaced: " << answer;
  EXPECT_GE(waited, kRequestTimeoutS - 0.1);
  EXPECT_LT(waited, 19.0);
}

TEST_F(HttpServerTest, EachKeepAliveRequestGetsItsOwnDeadline) {
  const int fd = Connect();
  const std::string get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string got;
  auto read_answer = [&] {
    got.clear();
    char buf[1024];
    while (got.find("{\"status\":\"ok\"}") == std::string::npos) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  };
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  read_answer();
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  // Idle on the kept-alive connection for longer than one request's deadline (but inside the
  // 5 s keep-alive timeout): the next request starts a fresh deadline.
  std::this_thread::sleep_for(std::chrono::milliseconds(kRequestTimeoutS * 1000 + 500));
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  read_answer();
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  close(fd);
}

TEST_F(HttpServerTest, AStreamMayOutliveTheRequestDeadline) {
  httplib::Client cli("127.0.0.1", server_->port());
  cli.set_read_timeout(60, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = Body(3, 120);
  req.set_header("Content-Type", "application/json");
  std::string got;
  const auto t0 = std::chrono::steady_clock::now();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    // A reader that stalls past the request deadline before taking the rest.
    if (got.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(kRequestTimeoutS * 1000 + 500));
    got.append(data, n);
    return true;
  };
  auto res = cli.send(req);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(kRequestTimeoutS));
  EXPECT_EQ(Count(got, "\"logprobs\":{"), 120);
  EXPECT_THAT(got, ::testing::HasSubstr("data: [DONE]"));
}

// A burst of connections must not overflow the accept queue (cpp-httplib listens with a
// backlog of 5; the kernel then drops SYNs and clients wait seconds for the retransmission).
// With nothing accepting yet, every one of 64 connects must complete from the queue alone.
TEST(HttpServerBacklogTest, ABurstOfConnectsFitsTheAcceptQueue) {
  Metrics metrics("tiny");
  ServerOptions so;
  so.port = 0;
  Server server(so, &metrics);
  ASSERT_TRUE(server.Bind().ok());  // bound and listening, but not accepting (no Start)
  constexpr int kClients = 64;
  std::vector<pollfd> fds;
  for (int i = 0; i < kClients; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int r = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ASSERT_TRUE(r == 0 || errno == EINPROGRESS) << errno;
    fds.push_back({fd, POLLOUT, 0});
  }
  // A connect whose SYN was dropped stays pending until its retransmission (1 s later).
  int connected = 0;
  const auto until = std::chrono::steady_clock::now() + 500ms;
  while (connected < kClients && std::chrono::steady_clock::now() < until) {
    poll(fds.data(), fds.size(), 50);
    connected = 0;
    for (const pollfd& p : fds) {
      int err = -1;
      socklen_t len = sizeof err;
      if ((p.revents & POLLOUT) && getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
          err == 0) {
        ++connected;
      }
    }
  }
  for (const pollfd& p : fds) close(p.fd);
  EXPECT_EQ(connected, kClients);
}

TEST_F(HttpServerTest, ShutdownEndsStreamsInFlight) {
  std::vector<std::string> bodies(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) clients.emplace_back([&, i] { bodies[i] = Stream(i, 250); });
  for (int i = 0; i < 500 && engine_->Stats().running < 3; ++i) std::this_thread::sleep_for(10ms);
  engine_->Shutdown(0ms);
  server_->Stop();
  for (auto& t : clients) t.join();
  for (const std::string& b : bodies) EXPECT_THAT(b, ::testing::HasSubstr("data: [DONE]"));
}

}  // namespace
}  // namespace g4
