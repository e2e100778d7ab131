// `g4 chat`: a multi-turn chat in the terminal. Each line is a user turn; the answer streams to
// stdout as it is generated, then its speed goes to stderr. Every turn sends the whole
// conversation (runtime/conversation.h) through the model's chat template, in the KV cache of
// the last turn when the new prompt extends what it holds. Lines starting with '/' are commands
// (/help). Ctrl-C stops the answer being generated (what was shown stays in the history) or, at
// the prompt, only prints a hint; Ctrl-D (end of input) quits. With stdin not a terminal (a pipe
// or a file) there is no "> " prompt: each line is answered, then it exits.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "backend_setup.h"
#include "commands.h"
#include "core/log.h"
#include "progress.h"
#include "runtime/conversation.h"
#include "runtime/generator.h"
#include "sampling_flags.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace g4::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
int g_wake[2] = {-1, -1};  // the self-pipe: SIGINT writes a byte the prompt's poll() sees

void OnSigint(int) {
  g_interrupted = 1;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_wake[1], &byte, 1);
}

// SIGINT sets a flag (checked between tokens) and wakes the prompt instead of ending the
// process. The pipe, not EINTR, wakes the reader: a Ctrl-C that lands just before the reader
// blocks (or on another thread) still reaches it.
Status CatchSigint() {
  if (pipe(g_wake) != 0) return IoError("cannot create a pipe for Ctrl-C");
  for (int fd : g_wake) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  return Status::Ok();
}

// Lines of stdin, or a Ctrl-C typed while waiting for one.
class LineReader {
 public:
  enum class Result { kLine, kEof, kInterrupted };

  Result Next(std::string* line) {
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        if (!line->empty() && line->back() == '\r') line->pop_back();
        return Result::kLine;
      }
      if (eof_) {
        if (buf_.empty()) return Result::kEof;
        *line = std::move(buf_);  // a last line without '\n'
        buf_.clear();
        return Result::kLine;
      }
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wake[0], POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        eof_ = true;
        continue;
      }
      if (fds[1].revents != 0) {
        char drain[64];
        while (read(g_wake[0], drain, sizeof drain) > 0) {
        }
        if (g_interrupted) {  // else a Ctrl-C that already stopped an answer
          g_interrupted = 0;
          buf_.clear();  // the terminal drops the half-typed line too
          return Result::kInterrupted;
        }
      }
      if (fds[0].revents == 0) continue;
      char chunk[4096];
      const ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        eof_ = true;  // end of input, or a read error, which ends it the same way
      }
    }
  }

 private:
  std::string buf_;
  bool eof_ = false;
};

struct ChatArgs {
  ModelFlags model;
  std::string system;
  int progress_ms = kDefaultProgressIntervalMs;
  GenerationFlags gen;
};

constexpr char kHelp[] =
    "/reset        forget the conversation (the system message stays)\n"
    "/system TEXT  set the system message and start a new conversation (/system alone: none)\n"
    "/save FILE    write the conversation as OpenAI-format JSON messages\n"
    "/help         this list\n"
    "/quit         leave (Ctrl-D too)\n"
    "Ctrl-C stops an answer (the part shown stays in the history); at the prompt it only "
    "prints a hint.\n";

class ChatLoop {
 public:
  ChatLoop(TextSession& session, const ChatArgs& args)
      : s_(session),
        args_(args),
        tty_(isatty(STDIN_FILENO)),
        conversation_(ChatOptions{true, false, session.tokenizer.chat_style}),
        options_(args.gen.ToOptions(session.model().info())) {
    const Tokenizer* words = session.tokenizer.tokenizer.get();
    options_.degeneracy.is_word = [words](int32_t id) { return words->IsWordToken(id); };
    if (!args.system.empty()) conversation_.SetSystem(args.system);
  }

  int Run() {
    if (const Status s = CatchSigint(); !s.ok()) return LogFailure(s);
    if (tty_) LogInfo("chat: /help lists the commands, Ctrl-D quits");
    LineReader reader;
    for (;;) {
      if (tty_) Out("> ");
      std::string line;
      const LineReader::Result r = reader.Next(&line);
      if (r == LineReader::Result::kEof) break;
      if (r == LineReader::Result::kInterrupted) {
        Out("\n");
        LogInfo("Ctrl-C only stops an answer; /quit or Ctrl-D leaves");
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      if (line[0] == '/') {
        if (!Command(line)) break;
        continue;
      }
      conversation_.AddUser(line);
      const Status s = Answer();
      if (!s.ok()) {
        conversation_.PopLast();
        LogError(s.ToString());
      }
    }
    if (tty_) Out("\n");
    return 0;
  }

 private:
  static void Out(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }

  // Runs one slash command; false to leave.
  bool Command(const std::string& line) {
    const size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
    arg.erase(0, arg.find_first_not_of(" \t"));
    if (name == "/quit" || name == "/exit") return false;
    if (name == "/help") {
      Out(kHelp);
    } else if (name == "/reset") {
      conversation_.Reset();
      LogInfo("conversation cleared");
    } else if (name == "/system") {
      conversation_.SetSystem(arg);
      LogInfo(arg.empty() ? "no system message; new conversation"
                          : "system message set; new conversation");
    } else if (name == "/save") {
      if (arg.empty()) {
        LogError("/save needs a file name: /save FILE");
      } else if (const Status s = conversation_.Save(arg); !s.ok()) {
        LogError(s.ToString());
      } else {
        LogInfo("saved " + std::to_string(conversation_.Messages().size()) + " messages to " + arg);
      }
    } else {
      LogError("unknown command " + name + " (/help lists them)");
    }
    return true;
  }

  // Generates the answer to the conversation so far, streaming it, and adds it to the history.
  Status Answer() {
    const Tokenizer& tok = *s_.tokenizer.tokenizer;
    G4_ASSIGN_OR_RETURN(std::string text, conversation_.Prompt());
    const std::vector<int32_t> prompt = tok.Encode(text, EncodeOptions{true, false});
    const int64_t model_context = s_.model().info().max_context;
    const int64_t context = options_.max_context > 0
                                ? std::min<int64_t>(options_.max_context, model_context)
                                : model_context;
    if (static_cast<int64_t>(prompt.size()) >= context) {
      return InvalidArgument("the conversation is " + std::to_string(prompt.size()) +
                             " tokens, the context " + std::to_string(context) +
                             ": /reset starts a new one");
    }
    G4_RETURN_IF_ERROR(PrepareCache(prompt, context));
    StreamDecoder decoder(tok, DecodeOptions{true});
    std::string answer;
    auto emit = [&answer](std::string_view piece) {
      const std::string valid = utf8::Sanitize(piece);  // a terminal gets valid UTF-8 only
      answer += valid;
      Out(valid);
    };
    GenerationCallbacks cb;
    cb.decode_piece = [&decoder](int32_t id) {
      auto piece = decoder.Push(id);
      return piece.ok() ? *piece : std::string();
    };
    cb.on_token = [&emit](int32_t, std::string_view piece) {
      if (g_interrupted) return false;
      emit(piece);
      return true;
    };
    cb.on_prefill_progress = PrefillProgress(args_.progress_ms);
    g_interrupted = 0;
    auto r = GenerateInCache(s_.model(), *s_.backend, *cache_, prompt, options_, cb);
    if (!r.ok()) {
      cache_.reset();
      return r.status();
    }
    // What the cache now holds: the prompt and the answer tokens that were run.
    cached_ids_ = prompt;
    cached_ids_.insert(cached_ids_.end(), r->tokens.begin(), r->tokens.end());
    cached_ids_.resize(static_cast<size_t>(cache_->size()));
    if (r->finish_reason != "cancelled") emit(decoder.Finish());
    Out("\n");
    g_interrupted = 0;
    conversation_.AddAssistant(std::move(answer));
    const GenerationStats& st = r->stats;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%lld tokens, %.1f tok/s | prompt %lld tokens (%lld cached), %.1f tok/s%s",
                  static_cast<long long>(st.generated_tokens), st.DecodeTokensPerSecond(),
                  static_cast<long long>(st.prompt_tokens),
                  static_cast<long long>(st.cached_tokens), st.PrefillTokensPerSecond(),
                  r->finish_reason == "cancelled" ? " | stopped (Ctrl-C)"
                  : r->finish_reason == "length"  ? " | max tokens reached"
                                                  : "");
    LogInfo(buf);
    return Status::Ok();
  }

  // Keeps the KV cache when `prompt` extends what it holds (the last turn's prompt and answer,
  // when the answer's text encodes to the tokens generated), so a turn prefills only its new
  // part; else starts it over.
  Status PrepareCache(const std::vector<int32_t>& prompt, int64_t context) {
    if (cache_ && cache_->max_context() == context && cached_ids_.size() < prompt.size() &&
        std::equal(cached_ids_.begin(), cached_ids_.end(), prompt.begin())) {
      return Status::Ok();
    }
    cached_ids_.clear();
    if (cache_ && cache_->max_context() == context) {
      cache_->Reset();
      return Status::Ok();
    }
    G4_ASSIGN_OR_RETURN(cache_, SequenceKvCache::Create(s_.model().info().layers,
                                                        static_cast<int>(context),
                                                        s_.backend->memory(),
                                                        s_.backend->kv_dtype()));
    return Status::Ok();
  }

  TextSession& s_;
  const ChatArgs& args_;
  const bool tty_;
  Conversation conversation_;
  GenerationOptions options_;
  std::unique_ptr<SequenceKvCache> cache_;  // full layers grow as used: the context costs nothing
  std::vector<int32_t> cached_ids_;         // the ids whose K/V the cache holds
};

int Chat(const ChatArgs& a) {
  auto session = OpenTextSession(a.model);
  if (!session.ok()) return LogFailure(session.status());
  if (session->tokenizer.chat_style.format == ChatFormat::kNone) {
    return LogFailure(FailedPrecondition("--model " + a.model.path +
                                         ": the model has no chat template (`g4 run` takes raw "
                                         "text)"));
  }
  return ChatLoop(*session, a).Run();
}

}  // namespace

RunFn AddChatCommand(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  a->gen.max_tokens = 1024;  // a chat answer is often longer than run's 128
  CLI::App* sub = app.add_subcommand(
      "chat", "Chat with the model in the terminal: one line per turn, the answer streamed");
  AddModelOptions(sub, &a->model);
  sub->add_option("--system", a->system, "System message of the conversation");
  AddProgressOption(sub, &a->progress_ms);
  a->gen.Register(sub);
  sub->footer(std::string("Commands at the prompt:\n") + kHelp +
              "Without a terminal on stdin (a pipe): no prompt, each line is answered, and the "
              "end of input quits.\n--max-tokens is 1024 unless given.");
  return [a] { return Chat(*a); };
}

}  // namespace g4::cli
