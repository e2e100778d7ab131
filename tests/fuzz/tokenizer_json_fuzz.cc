// Fuzzes tokenizer.json: ParseTokenizerJson and the tokenizer built from it
// (Tokenizer::FromJson), then a round of encoding and decoding with whatever vocabulary the
// input defines. Every id Encode returns must be inside the vocabulary and decode.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto json = g4::ParseTokenizerJson(std::string(g4::fuzz::AsText(data, size)), "tokenizer.json");
  if (!json.ok()) {
    G4_FUZZ_CHECK(!json.status().message().empty());
    return 0;
  }
  auto tok = g4::Tokenizer::FromJson(**json, "tokenizer.json");
  if (!tok.ok()) return 0;
  const g4::Tokenizer& t = **tok;
  // Text that exercises spaces, newlines, special-token spellings, bytes outside the
  // vocabulary (byte fallback) and a long word.
  static const std::string kText =
      "Hello world  \n\n<bos><|turn>user\nab abab\xe2\x96\x81x \xf0\x9f\x98\x80 \xff"
      "<eos>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  for (bool special : {true, false}) {
    g4::EncodeOptions options;
    options.parse_special = special;
    options.add_bos = special;
    const std::vector<int32_t> ids = t.Encode(kText, options);
    for (int32_t id : ids) G4_FUZZ_CHECK(id >= 0 && id < t.vocab_size());
    auto text = t.Decode(ids);
    G4_FUZZ_CHECK(text.ok());
    g4::DecodeOptions skip;
    skip.skip_special = true;
    G4_FUZZ_CHECK(t.Decode(ids, skip).ok());
  }
  // Every id decodes or is refused with an error, never read out of bounds.
  const int32_t n = t.vocab_size();
  for (int32_t id = -1; id <= n && id < 4096; ++id) {
    std::string out;
    (void)t.AppendDecoded(id, {}, &out);
  }
  return 0;
}
