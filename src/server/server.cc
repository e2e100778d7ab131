#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/log.h"
#include "server/http/deadline_server.h"
#include "server/http/task_queue.h"
#include "server/openai/api_error.h"
#include "server/openai/response.h"
#include "server/openai/tokenize_request.h"
#include "server/output_stream.h"
#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

using namespace std::chrono_literals;
using openai::ApiError;
using openai::ojson;
using openai::ParsedRequest;

constexpr auto kPollInterval = 50ms;  // how often a waiting handler checks that its client is there

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(openai::ToJsonString(e), "application/json");
}

void SendJson(httplib::Response& res, const ojson& body) {
  res.status = 200;
  res.set_content(openai::Dump(body), "application/json");
}

// The options with every timeout at least one second (0 or less would mean "never wait").
ServerOptions ClampTimeouts(ServerOptions o) {
  o.request_timeout_s = std::max(1, o.request_timeout_s);
  o.read_timeout_s = std::max(1, o.read_timeout_s);
  o.write_timeout_s = std::max(1, o.write_timeout_s);
  return o;
}

// The whole reply to a request that did not arrive in time (sent by the connection's stream,
// outside httplib's routing, hence complete with its status line). `o`: clamped.
std::string TimeoutResponse(const ServerOptions& o) {
  const std::string body = openai::ToJsonString(openai::MakeError(
      408, "The request did not arrive in time: its line, headers and body must arrive within " +
               std::to_string(o.request_timeout_s) + " s, with no pause over " +
               std::to_string(o.read_timeout_s) + " s."));
  return "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string TokenText(const Tokenizer& tok, int32_t id) {
  std::string s;
  if (!tok.AppendDecoded(id, DecodeOptions{}, &s).ok()) return "";
  return s;
}

openai::TokenLogprob ToApiLogprob(const Tokenizer& tok, const TokenLogprob& lp) {
  openai::TokenLogprob out;
  out.token = TokenText(tok, lp.token);
  out.logprob = lp.logprob;
  for (const auto& [id, value] : lp.top) out.top.push_back({TokenText(tok, id), value});
  return out;
}

// OpenAI's finish_reason for an engine finish reason: "tool_calls" when the answer ended with
// calls to make ("length" still wins: a cut call is not one to run).
std::string ApiFinishReason(const std::string& reason, bool tool_calls) {
  if (reason == "length") return "length";
  return tool_calls ? "tool_calls" : "stop";  // "degenerate" stops like a stop string
}

// One generation request, from parsed body to the last byte written: `n` choices, each a
// sequence of its own in the engine (an independent sample of the same prompt).
class Generation {
 public:
  Generation(const ServingState& s, Metrics* m, ParsedRequest req)
      : s_(s), metrics_(m), req_(std::move(req)) {
    chat_ = req_.kind == ParsedRequest::Kind::kChat;
    meta_.id = openai::NewRequestId(chat_ ? "chatcmpl-" : "cmpl-");
    meta_.created = openai::UnixNow();
    meta_.model = s.defaults.model_name;
  }

  // Tokenizes, checks the context and submits every choice; on failure fills *error.
  bool Submit(ApiError* error) {
    if (chat_) {
      ChatOptions co;
      co.add_generation_prompt = req_.add_generation_prompt;
      co.enable_thinking = req_.enable_thinking;
      co.style = s_.chat_style;
      const nlohmann::json& tools = req_.constraints.tools;
      if (!tools.empty() && co.style.format != ChatFormat::kGemma4) {
        return Fail(openai::BadRequest("tools: this model's chat format (" +
                                           std::string(ChatFormatName(co.style.format)) +
                                           ") has no tool-call syntax",
                                       "tools"),
                    error);
      }
      auto text = RenderChat(req_.messages, tools.empty() ? nlohmann::json() : tools, co);
      if (!text.ok()) return Fail(openai::FromStatus(text.status(), "messages"), error);
      prompt_ = s_.tokenizer->Encode(*text, EncodeOptions{true, false});
    } else if (req_.prompt_is_ids) {
      if (auto e = openai::ValidatePromptIds(req_, s_.engine->model_info().input_vocab)) return Fail(*e, error);
      prompt_ = req_.prompt_ids;
    } else {
      prompt_ = s_.tokenizer->Encode(req_.prompt_text, EncodeOptions{true, true});
    }
    if (auto e = openai::ValidateLogitBias(req_, s_.engine->model_info().vocab_size)) {
      return Fail(*e, error);
    }
    auto max_tokens = openai::ResolveMaxTokens(req_, static_cast<int64_t>(prompt_.size()),
                                               s_.defaults.max_model_len);
    if (!max_tokens.ok()) return Fail(max_tokens.error(), error);
    EngineRequest er;
    er.prompt = prompt_;
    er.options.max_tokens = max_tokens.value();
    er.options.sampling = req_.sampling;
    er.options.stop_ids = req_.stop_token_ids;
    er.options.stop_strings = req_.stop;
    er.options.ignore_eos = req_.ignore_eos;
    er.options.stop_on_degenerate = req_.stop_on_degenerate;
    er.skip_special_tokens = req_.skip_special_tokens;
    er.top_logprobs = req_.logprobs ? req_.top_logprobs : -1;
    if (const openai::OutputConstraints& c = req_.constraints; c.grammar != nullptr) {
      // Auto tool choice waits for the model's own <|tool_call> (a Gemma 4 vocabulary has it;
      // without it the model cannot call, so nothing is constrained).
      const int32_t trigger =
          c.grammar_from_tool_call ? s_.tokenizer->TokenId(gemma4::kToolCallStart) : -1;
      if (!c.grammar_from_tool_call || trigger >= 0) {
        er.options.grammar.grammar = c.grammar;
        er.options.grammar.vocab = s_.vocab_index;
        er.options.grammar.trigger_token = trigger;
      }
    }
    for (int i = 0; i < req_.n; ++i) {
      EngineRequest one = er;
      // A seed makes the whole response reproducible; each choice still draws its own
      // stream (vLLM: seed + index), or the n choices would all be the same sample.
      if (one.options.sampling.seed.has_value()) *one.options.sampling.seed += i;
      auto handle = s_.engine->Submit(std::move(one));
      if (!handle.ok()) {
        Cancel();  // the choices already queued
        const Status& st = handle.status();
        return Fail(st.code() == StatusCode::kUnavailable
                        ? openai::Unavailable(st.message())
                        : openai::FromStatus(st, chat_ ? "messages" : "prompt"),
                    error);
      }
      auto c = std::make_unique<ChoiceState>(req_.constraints.parse_tool_calls());
      c->handle = *handle;
      choices_.push_back(std::move(c));
    }
    return true;
  }

  // Streams SSE events. Returns false when the client is gone (the request is cancelled).
  bool Stream(httplib::DataSink& sink) {
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (!WriteRoleChunk(sink, static_cast<int>(i))) return false;
    }
    RequestEvent ev;
    size_t i = 0;
    int64_t sampled = 0, cached = 0;
    for (size_t left = choices_.size(); left > 0;) {
      if (!NextEvent(&ev, &i)) {
        if (!sink.is_writable()) return Cancel();
        continue;
      }
      ChoiceState& c = *choices_[i];
      if (ev.kind == RequestEvent::Kind::kFinished) {
        c.finished = true;
        --left;
        sampled += ev.result.sampled;
        if (i == 0) cached = ev.result.stats.cached_tokens;  // the prompt is counted once
        if (ev.result.finish_reason.rfind("error", 0) == 0) {
          Cancel();  // the other choices: the response is an error now
          Write(sink, openai::SseEvent(openai::ToJson(openai::Internal(ev.result.finish_reason))));
          return Done(sink);
        }
        if (!WriteFinish(sink, static_cast<int>(i), ev.result)) return Cancel();
        continue;
      }
      openai::Chunk chunk;
      chunk.index = static_cast<int>(i);
      if (chat_) {
        OutputDelta d;
        c.output.Feed(ev.text, &d);
        FillChunk(std::move(d), &chunk);
      } else if (!ev.text.empty()) {
        chunk.text = ev.text;
      }
      if (ev.token >= 0 && req_.logprobs) {
        chunk.logprobs = std::vector<openai::TokenLogprob>{ToApiLogprob(*s_.tokenizer, ev.logprob)};
        if (!chunk.text) chunk.text = "";
      }
      if (!chunk.text && !chunk.reasoning && chunk.tool_calls.empty()) {
        continue;  // nothing to show yet (held back)
      }
      chunk.usage_null = req_.include_usage;
      if (!Write(sink, openai::SseEvent(Body(chunk)))) return Cancel();
    }
    if (req_.include_usage) {
      const ojson usage = openai::Usage(static_cast<int64_t>(prompt_.size()), sampled, cached);
      Write(sink, openai::SseEvent(openai::UsageChunk(
                      meta_, chat_ ? "chat.completion.chunk" : "text_completion", usage)));
    }
    return Done(sink);
  }

  // Waits for every choice's whole answer, then writes one JSON body.
  bool Complete(httplib::DataSink& sink) {
    RequestEvent ev;
    size_t i = 0;
    for (size_t left = choices_.size(); left > 0;) {
      if (!NextEvent(&ev, &i)) {
        if (!sink.is_writable()) return Cancel();
        continue;
      }
      ChoiceState& c = *choices_[i];
      if (ev.kind == RequestEvent::Kind::kFinished) {
        c.finished = true;
        --left;
        c.result = std::move(ev.result);
        if (c.result.finish_reason.rfind("error", 0) == 0) {
          Cancel();
          Write(sink, openai::ToJsonString(openai::Internal(c.result.finish_reason)));
          sink.done();
          return true;
        }
        continue;
      }
      if (ev.token >= 0 && req_.logprobs) {
        c.logprobs.push_back(ToApiLogprob(*s_.tokenizer, ev.logprob));
      }
    }
    std::vector<openai::Choice> choices;
    std::vector<DegeneracyVerdict> verdicts;
    int64_t sampled = 0;
    for (size_t k = 0; k < choices_.size(); ++k) {
      ChoiceState& c = *choices_[k];
      const GenerationResult& r = c.result;
      openai::Choice choice;
      choice.index = static_cast<int>(k);
      if (chat_) {
        // The same splitter as the stream, fed the whole text: both give the same answer.
        OutputDelta d;
        c.output.Feed(r.text, &d);
        c.output.Finish(&d);
        choice.text = std::move(d.content);
        if (!d.reasoning.empty() && req_.include_reasoning) {
          choice.reasoning = std::move(d.reasoning);
        }
        choice.tool_calls = c.output.tool_calls();
      } else {
        choice.text = (req_.echo && !req_.prompt_is_ids ? req_.prompt_text : "") + r.text;
      }
      choice.finish_reason = ApiFinishReason(r.finish_reason, !choice.tool_calls.empty());
      if (req_.logprobs) choice.logprobs = std::move(c.logprobs);
      choices.push_back(std::move(choice));
      verdicts.push_back(r.degeneracy);
      sampled += r.sampled;
      LogVerdict(static_cast<int>(k), r);
    }
    // The prompt is counted once: the choices share it.
    const ojson usage = openai::Usage(static_cast<int64_t>(prompt_.size()), sampled,
                                      choices_[0]->result.stats.cached_tokens);
    const ojson body = chat_ ? openai::ChatCompletion(meta_, choices, usage, verdicts)
                             : openai::TextCompletion(meta_, choices, usage, verdicts);
    Write(sink, openai::Dump(body));
    sink.done();
    return true;
  }

 private:
  struct ChoiceState {
    explicit ChoiceState(bool parse_tools) : output(parse_tools) {}
    std::shared_ptr<RequestHandle> handle;
    OutputStream output;
    bool finished = false;
    GenerationResult result;                      // Complete: the finished result
    std::vector<openai::TokenLogprob> logprobs;   // Complete: gathered as tokens come
  };

  bool Fail(const ApiError& e, ApiError* out) {
    *out = e;
    return false;
  }

  bool Write(httplib::DataSink& sink, std::string_view data) {
    return sink.write(data.data(), data.size());
  }

  bool Done(httplib::DataSink& sink) {
    Write(sink, openai::kSseDone);
    sink.done();
    return true;
  }

  bool Cancel() {
    for (const auto& c : choices_) c->handle->Cancel();
    return false;
  }

  // The next event of an unfinished choice into *ev and its index into *index; false when
  // none came within kPollInterval. Several choices are visited in turn, so that one busy
  // choice cannot hold back the others' tokens.
  bool NextEvent(RequestEvent* ev, size_t* index) {
    const size_t n = choices_.size();
    if (n == 1) {
      *index = 0;
      return choices_[0]->handle->Next(ev, kPollInterval);
    }
    const auto deadline = std::chrono::steady_clock::now() + kPollInterval;
    for (;;) {
      size_t waiting_on = n;
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (cursor_ + k) % n;
        if (choices_[i]->finished) continue;
        if (waiting_on == n) waiting_on = i;
        if (choices_[i]->handle->Next(ev, 0ms)) {
          cursor_ = (i + 1) % n;
          *index = i;
          return true;
        }
      }
      if (waiting_on == n || std::chrono::steady_clock::now() >= deadline) return false;
      // Nothing pending: a short wait on one choice, then every choice again.
      if (choices_[waiting_on]->handle->Next(ev, 2ms)) {
        cursor_ = (waiting_on + 1) % n;
        *index = waiting_on;
        return true;
      }
    }
  }

  void FillChunk(OutputDelta d, openai::Chunk* chunk) const {
    if (!d.reasoning.empty() && req_.include_reasoning) chunk->reasoning = std::move(d.reasoning);
    if (!d.content.empty()) chunk->text = std::move(d.content);
    chunk->tool_calls = std::move(d.tool_calls);
  }

  ojson Body(const openai::Chunk& chunk) const {
    return chat_ ? openai::ChatChunk(meta_, chunk) : openai::TextChunk(meta_, chunk);
  }

  bool WriteRoleChunk(httplib::DataSink& sink, int index) {
    if (!chat_) return true;
    openai::Chunk first;
    first.index = index;
    first.role = true;
    first.text = "";
    first.usage_null = req_.include_usage;
    return Write(sink, openai::SseEvent(Body(first))) || Cancel();
  }

  // The end of one choice: text held back until now, then its finish_reason and verdict.
  bool WriteFinish(httplib::DataSink& sink, int index, const GenerationResult& r) {
    OutputStream& output = choices_[static_cast<size_t>(index)]->output;
    if (chat_) {  // a call whose closer never came is sent as it stands
      OutputDelta d;
      output.Finish(&d);
      openai::Chunk rest;
      rest.index = index;
      FillChunk(std::move(d), &rest);
      if (rest.text || rest.reasoning || !rest.tool_calls.empty()) {
        rest.usage_null = req_.include_usage;
        if (!Write(sink, openai::SseEvent(Body(rest)))) return false;
      }
    }
    openai::Chunk last;
    last.index = index;
    last.finish_reason = ApiFinishReason(r.finish_reason, !output.tool_calls().empty());
    last.verdict = r.degeneracy;
    last.usage_null = req_.include_usage;
    if (!chat_) last.text = "";
    if (!Write(sink, openai::SseEvent(Body(last)))) return false;
    LogVerdict(index, r);
    return true;
  }

  void LogVerdict(int index, const GenerationResult& r) {
    if (r.degeneracy.degenerate) {
      LogWarning("degenerate response " + meta_.id +
                 (req_.n > 1 ? " choice " + std::to_string(index) : std::string()) + ": " +
                 r.degeneracy.reason + " (from generated token " +
                 std::to_string(r.degeneracy.start) + ")" +
                 (r.finish_reason == "degenerate" ? ", stopped" : ""));
    }
  }

  const ServingState& s_;
  Metrics* metrics_;
  ParsedRequest req_;
  bool chat_ = true;
  openai::ResponseMeta meta_;
  std::vector<int32_t> prompt_;
  std::vector<std::unique_ptr<ChoiceState>> choices_;
  size_t cursor_ = 0;  // NextEvent's first choice to look at
};

}  // namespace

Server::Server(ServerOptions options, Metrics* metrics)
    : options_(ClampTimeouts(std::move(options))),
      metrics_(metrics),
      http_(std::make_unique<DeadlineHttpServer>(std::chrono::seconds(options_.request_timeout_s),
                                                 TimeoutResponse(options_))) {
  const size_t max_threads = static_cast<size_t>(std::max(8, options_.max_http_threads));
  http_->new_task_queue = [max_threads] { return new ElasticTaskQueue(4, max_threads); };
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, with which a second server on
  // the same port binds too and silently shares the connections instead of failing.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http_->set_tcp_nodelay(true);  // without it every SSE chunk can sit ~40 ms (Nagle)
  http_->set_keep_alive_max_count(1000);
  // Idle keep-alive connections hold an HTTP thread, and Stop() waits for them: keep it short.
  http_->set_keep_alive_timeout(5);
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_write_timeout(options_.write_timeout_s, 0);
  http_->set_payload_max_length(options_.max_body_bytes);
  Routes();
}

Server::~Server() { Stop(); }

Status Server::Bind() {
  // httplib would truncate the port to 16 bits and listen on another one.
  if (options_.port < 0 || options_.port > 65535) {
    return InvalidArgument("port " + std::to_string(options_.port) +
                           " is outside 0..65535 (0: any free port)");
  }
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) return IoError("cannot bind " + options_.host + " to any port");
  } else {
    if (!http_->bind_to_port(options_.host, options_.port)) {
      return IoError("cannot bind " + options_.host + ":" + std::to_string(options_.port) +
                     " (in use, or not an address of this machine)");
    }
    port_ = options_.port;
  }
  if (!http_->SetListenBacklog(SOMAXCONN)) {
    return IoError("cannot set the listen backlog of " + options_.host + ":" +
                   std::to_string(port_));
  }
  return Status::Ok();
}

void Server::Start() {
  listener_done_ = false;
  listener_ = std::thread([this] {
    http_->listen_after_bind();
    listener_done_ = true;
  });
  // httplib's stop() does nothing until the listener runs: a Stop() right after Start() would
  // then wait forever in accept(). Return once it runs (or has already given up).
  while (!http_->is_running() && !listener_done_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Server::SetReady(ServingState state) {
  state_ = std::move(state);
  ready_.store(true);
}

void Server::Stop() {
  if (http_) http_->stop();
  if (listener_.joinable()) listener_.join();
}

void Server::Routes() {
  httplib::Server& http = *http_;

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool open_route = req.path == "/health" || req.path == "/metrics";
    if (!options_.api_key.empty() && !open_route &&
        req.get_header_value("Authorization") != "Bearer " + options_.api_key) {
      SendError(res, openai::Unauthorized());
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!ready_.load() && !open_route) {
      SendError(res, openai::Unavailable("the model is loading"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 413) {
      SendError(res, openai::PayloadTooLarge(0));
    } else if (res.status == 404 && res.body.empty()) {
      // Only an unrouted request: a route's own 404 (e.g. an unknown model) keeps its message.
      SendError(res, openai::NotFound("no route " + req.method + " " + req.path));
    }
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    SendError(res, openai::Internal("internal error"));
  });

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_.load()) return SendError(res, openai::Unavailable("the model is loading"));
    if (draining_.load()) return SendError(res, openai::Unavailable("draining: shutting down"));
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });

  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_.load()) {
      const EngineStats st = state_.engine->Stats();
      metrics_->SetRequestsRunning(st.running);
      metrics_->SetRequestsWaiting(st.waiting);
      metrics_->SetKvCacheUsage(st.kv_cache_usage);
      metrics_->SetKvBlocksInUse(st.kv_blocks_in_use);
      metrics_->SetKvBytesInUse(st.kv_bytes_in_use);
      metrics_->SetDecodeSteps(st.decode_steps.replayed, st.decode_steps.recorded,
                               st.decode_steps.op_by_op);
    }
    res.set_content(metrics_->Render(), std::string(Metrics::kContentType));
  });

  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, openai::ModelsList(state_.defaults.model_name, state_.created,
                                     state_.defaults.max_model_len));
  });

  http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    auto parsed = openai::ParseTokenizeRequest(req.body, state_.defaults);
    if (!parsed.ok()) return SendError(res, parsed.error());
    const openai::TokenizeRequest& t = parsed.value();
    std::vector<int32_t> ids;
    if (t.is_chat) {
      ChatOptions co;
      co.add_generation_prompt = t.add_generation_prompt;
      co.enable_thinking = t.enable_thinking;
      co.style = state_.chat_style;
      auto text = RenderChat(t.messages, nlohmann::json(), co);
      if (!text.ok()) return SendError(res, openai::FromStatus(text.status(), "messages"));
      ids = state_.tokenizer->Encode(*text, EncodeOptions{true, false});
    } else {
      ids = state_.tokenizer->Encode(t.prompt, EncodeOptions{true, t.add_special_tokens});
    }
    std::optional<std::vector<std::string>> strs;
    if (t.return_token_strs) {
      strs.emplace();
      for (int32_t id : ids) strs->emplace_back(state_.tokenizer->Piece(id));
    }
    SendJson(res, openai::TokenizeResponse(ids, state_.defaults.max_model_len, strs));
  });

  http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    auto parsed = openai::ParseDetokenizeRequest(req.body, state_.defaults);
    if (!parsed.ok()) return SendError(res, parsed.error());
    auto text = state_.tokenizer->Decode(parsed.value().tokens);
    if (!text.ok()) return SendError(res, openai::BadRequest(text.status().message(), "tokens"));
    SendJson(res, openai::DetokenizeResponse(*text));
  });

  auto generate = [this](const httplib::Request& req, httplib::Response& res, bool chat) {
    auto parsed = chat ? openai::ParseChatRequest(req.body, state_.defaults)
                       : openai::ParseCompletionRequest(req.body, state_.defaults);
    if (!parsed.ok()) return SendError(res, parsed.error());
    const bool stream = parsed.value().stream;
    auto gen = std::make_shared<Generation>(state_, metrics_, std::move(parsed).value());
    ApiError error;
    if (!gen->Submit(&error)) return SendError(res, error);
    // Both kinds go through the chunked provider: it is what lets a waiting handler notice a
    // vanished client (is_writable) and cancel its request, streaming or not.
    if (stream) {
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");
      res.set_chunked_content_provider(
          "text/event-stream", [gen](size_t, httplib::DataSink& sink) { return gen->Stream(sink); });
    } else {
      res.set_chunked_content_provider(
          "application/json", [gen](size_t, httplib::DataSink& sink) { return gen->Complete(sink); });
    }
  };
  http.Post("/v1/chat/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, true);
  });
  http.Post("/v1/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, false);
  });
}

}  // namespace g4
