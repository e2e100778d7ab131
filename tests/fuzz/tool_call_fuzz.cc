// Fuzzes the parser of generated text (chat/chat.h ParseModelOutput; tool_syntax.h
// ParseValue): reasoning channels, tool calls and their Gemma-syntax argument values, which come
// from the model and so can be anything. Accepted tool calls must carry an object of arguments
// that serialises back to JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat.h"
#include "chat/tool_syntax.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = g4::fuzz::AsText(data, size);
  const g4::ParsedOutput out = g4::ParseModelOutput(text);
  G4_FUZZ_CHECK(out.content.size() <= size && out.reasoning.size() <= size);
  for (const g4::ParsedToolCall& call : out.tool_calls) {
    G4_FUZZ_CHECK(call.arguments.is_object());
    // Invalid UTF-8 from the model must not make the answer unserialisable.
    (void)call.arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  // The value parser alone, on the whole text.
  // ParseValue "never fails" (tool_syntax.h): an exception escaping it is a finding.
  size_t pos = 0;
  (void)g4::tool_syntax::ParseValue(text, &pos);
  G4_FUZZ_CHECK(pos <= size);
  (void)g4::StripThinking(text);
  return 0;
}
