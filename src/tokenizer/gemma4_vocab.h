// Gemma 3 -> Gemma 4 tokenizer files, for `g4 make-model --tokenizer`: the synthetic checkpoint
// gets Gemma 4's real vocabulary without a download. Gemma 4 keeps Gemma 3's 262,144 pieces and
// merges for ordinary text; only 19 control slots were renamed (formats.md §3.3), and they are
// special tokens in Gemma 4. Gemma 3's <image_soft_token> (id 262144) is dropped so the
// vocabulary is exactly 262,144 ids. Alongside go a tokenizer_config.json and g4's own
// chat_template.jinja (E2B/E4B form, or the 26B/31B form with the empty thought block).
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer_json.h"

namespace g4 {

struct Gemma4TokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
  std::string chat_template_jinja;
  int32_t vocab_size = 0;
};

// Converts a parsed Gemma 3 tokenizer.json (an already converted Gemma 4 file is accepted
// unchanged). InvalidArgument if a renamed slot holds something unexpected.
StatusOr<Gemma4TokenizerFiles> MakeGemma4TokenizerFiles(const TokenizerJson& gemma3,
                                                        bool large_model_template);

// Reads `gemma3_tokenizer_json` and writes tokenizer.json, tokenizer_config.json and
// chat_template.jinja into `out_dir` (which must exist). Returns the vocabulary size.
StatusOr<int32_t> WriteGemma4TokenizerFiles(const std::string& gemma3_tokenizer_json,
                                            const std::string& out_dir,
                                            bool large_model_template);

// g4's Gemma 4 chat template (Jinja, for Hugging Face-style consumers of the checkpoint); it
// renders what RenderChat renders. `large_model` adds the empty thought block to the generation
// prompt when thinking is off.
std::string Gemma4ChatTemplate(bool large_model);

}  // namespace g4
