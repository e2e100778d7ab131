// `g4 tokenize` and `g4 detokenize`: text (or a chat rendered with the checkpoint's Gemma 4
// template) to token ids as a JSON array, and ids back to text. Both take --model as a checkpoint
// directory or a tokenizer.json file. --batch reads a JSON array (of strings / of id arrays) and
// prints a JSON array of results: the JS parity test drives the C++ tokenizer through it.
// `tokenize --bench` measures load time and encoding speed (docs/tokenizer.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat.h"
#include "chat/model_tokenizer.h"
#include "commands.h"
#include "core/log.h"
#include "loader/gguf.h"
#include "loader/hf_cache.h"
#include "loader/json_file.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace g4::cli {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(const Status& s) {
  LogError(s.ToString());
  return 1;
}

// A checkpoint directory, a tokenizer.json, or a .gguf file (tokenizer from its metadata).
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model) {
  G4_ASSIGN_OR_RETURN(ModelTokenizer m, LoadModelTokenizer(model));
  return std::move(m.tokenizer);
}

StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return IoError("cannot read " + path);
  return ss.str();
}

void PrintIds(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  s += "]\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
}

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct TokenizeOptions {
  std::string model;
  std::string revision = "main";
  std::string text;
  std::string file;
  std::string chat;
  std::string batch;
  bool no_special = false;
  bool bos = false;
  bool thinking = false;
  bool no_generation_prompt = false;
  bool prompt = false;
  bool bench = false;
};

// --chat FILE: an array of messages, or {"messages": [...], "tools": [...],
// "enable_thinking": bool, "add_generation_prompt": bool}.
StatusOr<std::string> RenderChatFile(const TokenizeOptions& o) {
  G4_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(o.chat));
  nlohmann::json messages = j, tools;
  ChatOptions options;
  options.enable_thinking = o.thinking;
  options.add_generation_prompt = !o.no_generation_prompt;
  if (j.is_object()) {
    messages = j.value("messages", nlohmann::json());
    tools = j.value("tools", nlohmann::json());
    options.enable_thinking = j.value("enable_thinking", options.enable_thinking);
    options.add_generation_prompt = j.value("add_generation_prompt", options.add_generation_prompt);
  }
  std::error_code ec;
  if (std::filesystem::is_directory(o.model, ec)) {
    G4_ASSIGN_OR_RETURN(options.style, DetectChatStyle(o.model));
  } else if (IsGgufModelPath(o.model)) {
    G4_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(o.model));
    G4_ASSIGN_OR_RETURN(options.style, ChatStyleFromGguf(*gguf));
  }
  StatusOr<std::string> text = RenderChat(messages, tools, options);
  if (!text.ok()) return text.status().WithContext(o.chat);
  return text;
}

int Bench(double load_ms, const Tokenizer& tok, const std::string& text) {
  // First pass: cold (the per-thread word cache is empty); then repeated passes: warm.
  const auto t0 = Clock::now();
  const std::vector<int32_t> ids = tok.Encode(text);
  const double cold_ms = Ms(t0, Clock::now());
  int reps = 0;
  const auto t1 = Clock::now();
  double warm_ms = 0;
  do {
    (void)tok.Encode(text);
    ++reps;
    warm_ms = Ms(t1, Clock::now());
  } while (warm_ms < 1000 && reps < 1000);
  nlohmann::json r;
  r["load_ms"] = load_ms;
  r["bytes"] = text.size();
  r["tokens"] = ids.size();
  r["encode_cold_ms"] = cold_ms;
  r["encode_cold_mb_per_s"] = text.size() / (cold_ms / 1e3) / 1e6;
  r["encode_warm_mb_per_s"] = text.size() * static_cast<double>(reps) / (warm_ms / 1e3) / 1e6;
  std::printf("%s\n", r.dump().c_str());
  return 0;
}

int RunTokenize(const TokenizeOptions& o) {
  const int sources = !o.text.empty() + !o.file.empty() + !o.chat.empty() + !o.batch.empty();
  if (sources != 1) {
    return Fail(InvalidArgument("give exactly one of --text, --file, --chat, --batch"));
  }
  if (o.prompt) {  // the rendered chat text; no tokenizer needed
    if (o.chat.empty()) return Fail(InvalidArgument("--prompt needs --chat"));
    auto rendered = RenderChatFile(o);
    if (!rendered.ok()) return Fail(rendered.status());
    std::fwrite(rendered->data(), 1, rendered->size(), stdout);
    return 0;
  }
  const auto t0 = Clock::now();
  auto tok = LoadTokenizer(o.model);
  if (!tok.ok()) return Fail(tok.status());
  const double load_ms = Ms(t0, Clock::now());
  EncodeOptions eo;
  eo.parse_special = !o.no_special;
  eo.add_bos = o.bos;

  if (!o.batch.empty()) {
    auto j = ReadJsonFile(o.batch);
    if (!j.ok()) return Fail(j.status());
    if (!j->is_array()) return Fail(InvalidArgument(o.batch + ": expected a JSON array of strings"));
    std::string out = "[";
    for (size_t i = 0; i < j->size(); ++i) {
      if (!(*j)[i].is_string()) {
        return Fail(InvalidArgument(o.batch + ": element " + std::to_string(i) + " is not a string"));
      }
      const std::vector<int32_t> ids = (*tok)->Encode((*j)[i].get_ref<const std::string&>(), eo);
      out += i ? ",\n[" : "\n[";
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k) out += ',';
        out += std::to_string(ids[k]);
      }
      out += ']';
    }
    out += "\n]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  std::string text = o.text;
  if (!o.file.empty()) {
    auto bytes = ReadFileBytes(o.file);
    if (!bytes.ok()) return Fail(bytes.status());
    text = std::move(*bytes);
  }
  if (!o.chat.empty()) {
    auto rendered = RenderChatFile(o);
    if (!rendered.ok()) return Fail(rendered.status());
    text = std::move(*rendered);
    eo.parse_special = true;  // the rendered template's markers are the special tokens
  }
  if (o.bench) return Bench(load_ms, **tok, text);
  PrintIds((*tok)->Encode(text, eo));
  return 0;
}

struct DetokenizeOptions {
  std::string model;
  std::string revision = "main";
  std::string ids;
  std::string batch;
  bool skip_special = false;
};

// "1,2,3", "1 2 3" or "[1, 2, 3]".
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ',' || c == ' ' || c == '[' || c == ']' || c == '\n' || c == '\t') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == i || end - i > 9) {
      return InvalidArgument("--ids: '" + text.substr(i, 12) + "' is not a token id");
    }
    ids.push_back(static_cast<int32_t>(std::stol(text.substr(i, end - i))));
    i = end;
  }
  return ids;
}

int RunDetokenize(const DetokenizeOptions& o) {
  if (o.ids.empty() == o.batch.empty()) return Fail(InvalidArgument("give one of --ids, --batch"));
  auto tok = LoadTokenizer(o.model);
  if (!tok.ok()) return Fail(tok.status());
  DecodeOptions d;
  d.skip_special = o.skip_special;
  if (!o.batch.empty()) {
    auto j = ReadJsonFile(o.batch);
    if (!j.ok()) return Fail(j.status());
    if (!j->is_array()) return Fail(InvalidArgument(o.batch + ": expected an array of id arrays"));
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < j->size(); ++i) {
      std::vector<int32_t> ids;
      const nlohmann::json& row = (*j)[i];
      if (!row.is_array()) {
        return Fail(InvalidArgument(o.batch + ": element " + std::to_string(i) + " is not an array"));
      }
      for (const auto& v : row) {
        if (!v.is_number_integer()) {
          return Fail(InvalidArgument(o.batch + ": element " + std::to_string(i) +
                                      " holds a non-integer"));
        }
        ids.push_back(v.get<int32_t>());
      }
      auto text = (*tok)->Decode(ids, d);
      if (!text.ok()) return Fail(text.status().WithContext(o.batch + " element " + std::to_string(i)));
      out.push_back(utf8::Sanitize(*text));
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  auto ids = ParseIdList(o.ids);
  if (!ids.ok()) return Fail(ids.status());
  auto text = (*tok)->Decode(*ids, d);
  if (!text.ok()) return Fail(text.status());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

// --model ORG/NAME[:FILE.gguf] (--revision) as the cached snapshot path; a local path as is.
template <typename Options>
void AddModelFlags(CLI::App* sub, Options* o) {
  sub->add_option("--model", o->model,
                  "Checkpoint directory, tokenizer.json, .gguf file or ORG/NAME[:FILE.gguf] in "
                  "the Hugging Face cache")
      ->required();
  sub->add_option("--revision", o->revision, "Branch, tag or commit of --model ORG/NAME");
}

template <typename Options>
Status ResolveModel(Options* o) {
  G4_ASSIGN_OR_RETURN(o->model, ResolveModelPath(o->model, o->revision));
  return Status::Ok();
}

}  // namespace

RunFn AddTokenizeCommand(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* sub = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  AddModelFlags(sub, o.get());
  sub->add_option("--text", o->text, "The text");
  sub->add_option("--file", o->file, "Read the text from this file (bytes as they are)");
  sub->add_option("--chat", o->chat,
                  "Render a chat (JSON messages, or {messages, tools, enable_thinking}) with "
                  "the checkpoint's Gemma 4 template, then tokenize");
  sub->add_option("--batch", o->batch, "JSON array of strings; prints a JSON array of id arrays");
  sub->add_flag("--no-special", o->no_special,
                "Treat special-token text such as <|turn> in the input as plain text");
  sub->add_flag("--bos", o->bos, "Prepend <bos> (unless the text starts with it)");
  sub->add_flag("--thinking", o->thinking, "--chat: enable thinking (<|think|>)");
  sub->add_flag("--no-generation-prompt", o->no_generation_prompt,
                "--chat: do not end with the model turn's opening");
  sub->add_flag("--prompt", o->prompt,
                "--chat: print the rendered prompt text instead of its ids");
  sub->add_flag("--bench", o->bench,
                "Print load time and encoding speed (JSON) for the text instead of the ids");
  return [o] {
    const Status s = ResolveModel(o.get());
    return s.ok() ? RunTokenize(*o) : Fail(s);
  };
}

RunFn AddDetokenizeCommand(CLI::App& app) {
  auto o = std::make_shared<DetokenizeOptions>();
  CLI::App* sub = app.add_subcommand("detokenize", "Print the text of token ids");
  AddModelFlags(sub, o.get());
  sub->add_option("--ids", o->ids, "Token ids: 1,2,3 or [1,2,3]");
  sub->add_option("--batch", o->batch,
                  "JSON array of id arrays; prints a JSON array of strings (invalid UTF-8 as U+FFFD)");
  sub->add_flag("--skip-special", o->skip_special,
                "Leave out special tokens (tool and channel markers stay)");
  return [o] {
    const Status s = ResolveModel(o.get());
    return s.ok() ? RunDetokenize(*o) : Fail(s);
  };
}

}  // namespace g4::cli
