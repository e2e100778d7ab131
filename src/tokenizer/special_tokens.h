// The ids a runtime needs besides the vocabulary: BOS, EOS, PAD, UNK and the set of ids that end
// generation. Read from the checkpoint's tokenizer_config.json (token names) and
// generation_config.json (ids; its eos_token_id list is the stop set, e.g. [1, 106, 50] for the
// instruction-tuned Gemma 4 models, gemma4.md §4.4). Both files are optional.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {

struct SpecialTokenIds {
  int32_t bos = -1;  // -1: the vocabulary has none
  int32_t eos = -1;
  int32_t pad = -1;
  int32_t unk = -1;
  // Generation stops on any of these (sorted, unique).
  std::vector<int32_t> stop_ids;
  // tokenizer_config.json's add_bos_token. Informational: g4 never adds BOS implicitly; the chat
  // renderer writes "<bos>" and raw completion callers ask for it (EncodeOptions::add_bos).
  bool add_bos_token = false;
};

// Piece -> id, or -1.
using PieceLookup = std::function<int32_t(std::string_view)>;

// From the token names alone: <bos>, <eos>, <pad>, <unk>; stops on <eos>, and on <turn|> and
// <|tool_response> when the vocabulary has them (Gemma 4's instruction-tuned stop set).
SpecialTokenIds DefaultSpecialTokenIds(const PieceLookup& lookup, int32_t vocab_size);

// The JSON files beside a tokenizer.json, already parsed (null when absent); paths for messages.
struct CheckpointJsonFiles {
  const nlohmann::json* tokenizer_config = nullptr;
  const nlohmann::json* generation_config = nullptr;
  const nlohmann::json* config = nullptr;
  std::string tokenizer_config_path = "tokenizer_config.json";
  std::string generation_config_path = "generation_config.json";
  std::string config_path = "config.json";
};

// The ids from those files: generation_config.json ids over tokenizer_config.json names over the
// defaults; config.json's eos_token_id (or its text_config's) only without a generation config.
// Names must be in the vocabulary and ids inside it; otherwise InvalidArgument naming the file
// and field.
StatusOr<SpecialTokenIds> SpecialTokenIdsFromJson(const CheckpointJsonFiles& files,
                                                  const PieceLookup& lookup, int32_t vocab_size);

// Reads `model_dir`/tokenizer_config.json and generation_config.json (then config.json's
// eos_token_id if there is no generation config). Names must be in the vocabulary and ids inside
// it; otherwise InvalidArgument naming the file and field.
StatusOr<SpecialTokenIds> ReadSpecialTokenIds(const std::string& model_dir,
                                              const PieceLookup& lookup, int32_t vocab_size);

}  // namespace g4
