// Fuzzes the other OpenAI request bodies g4 parses (server/openai/*): /v1/completions
// (ParseCompletionRequest), /tokenize and /detokenize (tokenize_request.h). The first byte
// picks the endpoint, the rest is the body. Every rejection must be a 400 or 404 with a
// message, never an exception or a 5xx.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "server/openai/request.h"
#include "server/openai/tokenize_request.h"

namespace {

void CheckError(const g4::openai::ApiError& e) {
  G4_FUZZ_CHECK(e.status == 400 || e.status == 404);
  G4_FUZZ_CHECK(!e.message.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const g4::openai::ServerDefaults defaults = [] {
    g4::openai::ServerDefaults d;
    d.model_name = "gemma-4-e2b";
    d.max_model_len = 8192;
    d.stop_token_ids = {1, 106, 50};
    return d;
  }();
  const std::string_view body = g4::fuzz::AsText(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto r = g4::openai::ParseCompletionRequest(body, defaults);
      if (!r.ok()) {
        CheckError(r.error());
        break;
      }
      const g4::openai::ParsedRequest& p = r.value();
      G4_FUZZ_CHECK(p.kind == g4::openai::ParsedRequest::Kind::kCompletion);
      if (auto e = g4::openai::ValidatePromptIds(p, 262144)) CheckError(*e);
      const int64_t prompt = p.prompt_is_ids ? static_cast<int64_t>(p.prompt_ids.size()) : 10;
      auto max = g4::openai::ResolveMaxTokens(p, prompt, defaults.max_model_len);
      if (max.ok()) {
        G4_FUZZ_CHECK(max.value() > 0 && prompt + max.value() <= defaults.max_model_len);
      } else {
        CheckError(max.error());
      }
      break;
    }
    case 1: {
      auto r = g4::openai::ParseTokenizeRequest(body, defaults);
      if (!r.ok()) CheckError(r.error());
      break;
    }
    case 2: {
      auto r = g4::openai::ParseDetokenizeRequest(body, defaults);
      if (!r.ok()) {
        CheckError(r.error());
      } else {
        for (int32_t id : r.value().tokens) G4_FUZZ_CHECK(id >= 0);
      }
      break;
    }
  }
  return 0;
}
