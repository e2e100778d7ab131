// `g4 run`: text in, streamed text out. Prompt tokens, prefill tok/s, decode tok/s (decode
// steps only), end-to-end tok/s and the degeneracy verdict go to stderr at the end; a long
// prefill shows its progress every --progress-interval-ms. --json-schema FILE holds the answer to
// a JSON Schema (the grammar of response_format json_schema).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "backend_setup.h"
#include "chat/chat.h"
#include "chat/model_tokenizer.h"
#include "commands.h"
#include "core/log.h"
#include "loader/json_file.h"
#include "progress.h"
#include "runtime/generator.h"
#include "runtime/grammar/grammar.h"
#include "sampling_flags.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace g4::cli {
namespace {

struct RunArgs {
  ModelFlags model;
  std::string prompt;
  bool chat = false, think = false;
  std::string json_schema;  // a JSON Schema file: the answer is constrained to it
  int progress_ms = kDefaultProgressIntervalMs;
  GenerationFlags gen;
};

int Run(RunArgs& a) {
  auto fail = LogFailure;
  auto session = OpenTextSession(a.model);
  if (!session.ok()) return fail(session.status());
  const CausalLM& model = session->model();
  Backend& backend = *session->backend;
  ModelTokenizer* model_tok = &session->tokenizer;
  const std::unique_ptr<Tokenizer>* tok = &model_tok->tokenizer;

  std::vector<int32_t> prompt;
  if (a.chat) {
    const ChatStyle* style = &model_tok->chat_style;
    ChatOptions co;
    co.enable_thinking = a.think;
    co.style = *style;
    const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", a.prompt}}});
    auto text = RenderChat(messages, nlohmann::json(), co);
    if (!text.ok()) return fail(text.status());
    prompt = (*tok)->Encode(*text, EncodeOptions{true, false});
  } else {
    prompt = (*tok)->Encode(a.prompt, EncodeOptions{true, true});
  }
  GenerationOptions options = a.gen.ToOptions(model.info());
  const int64_t context = options.max_context > 0 ? options.max_context
                                                  : static_cast<int64_t>(prompt.size()) + options.max_tokens;
  if (static_cast<int64_t>(prompt.size()) > std::min<int64_t>(context, model.info().max_context)) {
    return fail(InvalidArgument("prompt of " + std::to_string(prompt.size()) +
                                " tokens is longer than the context of " + std::to_string(context)));
  }
  if (!a.json_schema.empty()) {
    auto checked = ReadJsonFile(a.json_schema);  // parse errors named with file and position
    if (!checked.ok()) return fail(checked.status());
    // Again with the file's key order: properties are written in the order declared.
    std::ifstream in(a.json_schema, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return fail(InvalidArgument(a.json_schema + ": cannot be read"));
    auto grammar = grammar::CompileJsonSchema(schema, a.json_schema);
    if (!grammar.ok()) return fail(grammar.status());
    options.grammar.grammar = *std::move(grammar);
    options.grammar.vocab = grammar::VocabIndex::Build(**tok);
  }
  const Tokenizer* words = tok->get();
  options.degeneracy.is_word = [words](int32_t id) { return words->IsWordToken(id); };
  StreamDecoder decoder(**tok, DecodeOptions{true});
  GenerationCallbacks cb;
  cb.on_info = [](const std::string& line) { LogInfo(line); };
  cb.decode_piece = [&decoder](int32_t id) {
    auto s = decoder.Push(id);
    return s.ok() ? *s : std::string();
  };
  cb.on_token = [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  cb.on_prefill_progress = PrefillProgress(a.progress_ms);
  auto r = Generate(model, backend, prompt, options, cb);
  if (!r.ok()) return fail(r.status());
  const std::string tail = decoder.Finish();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::printf("\n");
  LogGenerationSummary(*r);
  return 0;
}

}  // namespace

RunFn AddRunCommand(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt, streamed to stdout");
  AddModelOptions(sub, &a->model);
  sub->add_option("--prompt", a->prompt, "Prompt text")->required();
  sub->add_flag("--chat", a->chat, "Wrap the prompt as one user turn of the chat format");
  sub->add_flag("--think", a->think, "With --chat: enable thinking");
  sub->add_option("--json-schema", a->json_schema,
                  "JSON Schema file: the answer is JSON valid against it (constrained decoding)")
      ->check(CLI::ExistingFile);
  AddProgressOption(sub, &a->progress_ms);
  a->gen.Register(sub);
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
