// The Gemma 4 chat format: rendering OpenAI-style messages into the prompt text the released
// chat template produces (gemma4.md §4.3), and parsing the model's answer back into reasoning,
// content and tool calls (server-api.md §14).
//
// Rendering follows the current E2B/E4B chat_template.jinja: "<bos>"; a leading system turn when
// thinking is on, tools are declared or the first message is system/developer ("<|think|>\n",
// the trimmed system text, one "<|tool>declaration:...<tool|>" per tool); then
// "<|turn>{user|model|system}\n{trimmed content}<turn|>\n" per message; thought blocks
// (<|channel>...<channel|>) stripped from assistant history, reasoning replayed only for
// tool-calling turns after the last user message; assistant tool calls as
// "<|tool_call>call:NAME{k:v}<tool_call|>" followed, inside the same model turn, by the results of
// the tool messages after it as "<|tool_response>response:NAME{...}<tool_response|>"; an
// assistant message right after another continues its model turn (no second "<|turn>model\n").
// Checked string for string against the released template; the few deliberate differences (a
// later "developer" message is a system turn, per gemma4.md; JSON-string tool arguments are
// parsed; a tool message answering no call is an error) are listed in docs/tokenizer.md.
//
// The generation prompt differs by model size: E2B/E4B end with "<|turn>model\n"; the 26B/31B
// templates add an empty thought block "<|channel>thought\n<channel|>" when thinking is off.
// DetectChatStyle decides from the checkpoint's own template (or, without one, its config).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {

struct ChatStyle {
  // 26B/31B form: with thinking off, the generation prompt pre-closes an empty thought block.
  bool empty_thought_in_generation_prompt = false;
  // "<|think|>\n" (current templates) or "<|think|>" (earlier revisions).
  bool newline_after_think = true;
  // How the style was chosen, for logs: "chat_template.jinja", "config.json (...)", "default".
  std::string source = "default";
};

// The style a chat template's text implies: the empty-thought form if the template writes
// '<|channel>thought\n<channel|>' (as Jinja source, "\n" escaped or not); no newline after
// <|think|> if it writes '<|think|>' immediately closed by a quote.
ChatStyle ChatStyleFromTemplate(std::string_view jinja);

// Reads model_dir/chat_template.jinja, else tokenizer_config.json's "chat_template" (a string,
// or a list of {name, template} where "default" is used); without a template, config.json
// decides: per-layer embeddings (hidden_size_per_layer_input > 0) mean E2B/E4B (plain prompt),
// otherwise the large-model form. Without any of these: the E2B/E4B form.
StatusOr<ChatStyle> DetectChatStyle(const std::string& model_dir);

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = false;
  ChatStyle style;
};

// `messages`: array of {"role": system|developer|user|assistant|tool, "content": string | null |
// [{"type": "text", "text": ...}, {"type": "image"|"audio"|"video"}], "tool_calls": [{"id",
// "function": {"name", "arguments": JSON string or object}}], "tool_call_id", "name",
// "reasoning_content" | "reasoning"}. `tools`: null or an array of OpenAI tools.
// InvalidArgument naming the message for malformed input.
StatusOr<std::string> RenderChat(const nlohmann::json& messages, const nlohmann::json& tools,
                                 const ChatOptions& options);

// Removes every <|channel>...<channel|> block and trims (the template's strip_thinking).
std::string StripThinking(std::string_view text);

struct ParsedToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

struct ParsedOutput {
  std::string reasoning;  // the thought channel's text, without the "thought\n" header
  std::string content;    // what is left for the user, trimmed
  std::vector<ParsedToolCall> tool_calls;
};

// Splits generated text (decoded with the channel and tool markers rendered as text) into
// reasoning, content and tool calls. Tolerates: a missing "<channel|>" (everything after the
// opener is reasoning), a "<channel|>" without opener (everything before it is reasoning), a
// missing "<tool_call|>", a missing "call:" prefix, argument strings in '…' or "…" instead of
// <|"|>, and trailing stop markers (<turn|>, <eos>, <|tool_response>).
ParsedOutput ParseModelOutput(std::string_view text);

}  // namespace g4
