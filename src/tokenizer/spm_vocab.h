// Gemma 1-3's tokenizer from GGUF metadata: tokenizer.ggml.model = "llama", which is llama.cpp's
// name for a SentencePiece BPE model (tokens with scores and types, no merges). It is turned into
// the same TokenizerJson a tokenizer.json gives and built by the same Tokenizer code:
//   - merges: every split of a normal or user-defined piece into two vocabulary pieces, ranked
//     by the merged piece's score as Hugging Face's converter ranks them (spm_merges.h), so the
//     list equals the one in Google's Gemma 3 tokenizer.json;
//   - control and unknown tokens: special added tokens (matched in text only with
//     EncodeOptions::parse_special, skipped by DecodeOptions::skip_special);
//   - user-defined tokens ("\n", "\n\n", tab runs, "<b>", ...): non-special added tokens, matched
//     whole in the raw text (as llama.cpp and tokenizers do) and always rendered;
//   - byte tokens <0xNN>: byte fallback; unused tokens: plain pieces no merge produces;
//   - Gemma's fixed pipeline: " " -> "▁", no space prefix, "▁" -> " " on decode.
// llama.cpp's converter writes the user-defined runs of "▁" (ids 138-167) with spaces ("  "); they
// are spelled back with "▁" here, as in the SentencePiece model and tokenizer.json, so that text
// containing U+2581 tokenizes as SentencePiece and Hugging Face do (docs/tokenizer.md: "GGUF
// SentencePiece").
#pragma once

#include <memory>

#include "core/status.h"
#include "loader/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

namespace g4 {

// The TokenizerJson of a "llama" GGUF. Its views point into `file`'s mapping (and into its own
// storage for the respelled pieces): `file` must outlive it. Errors start with the file's path and
// name the key: NotFound for a missing tokenizer.ggml.{tokens,scores,token_type}; InvalidArgument
// for a mistyped array, one whose length is not the token count, a score that is not finite, a
// byte token not spelled <0xNN>, an empty control or user-defined token, an id outside the
// vocabulary; Unimplemented when tokenizer.ggml.add_space_prefix is true or absent (llama.cpp
// then prepends a space, which Gemma's tokenizer never does).
StatusOr<std::unique_ptr<TokenizerJson>> SpmTokenizerJsonFromGguf(const GgufFile& file);

// The tokenizer of a "llama" GGUF. Special ids: tokenizer.ggml.{bos,eos,padding,unknown}_token_id
// over the names <bos>, <eos>, <pad>, <unk>; add_bos_token from tokenizer.ggml.add_bos_token
// (llama.cpp's default for SentencePiece: true); generation stops on the EOS id, on <eos> and on
// <end_of_turn> when the vocabulary has them (Gemma 3's generation_config.json: [1, 106]).
StatusOr<std::unique_ptr<Tokenizer>> SpmTokenizerFromGguf(const GgufFile& file);

}  // namespace g4
