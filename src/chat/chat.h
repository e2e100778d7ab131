// Chat formats: rendering OpenAI-style messages into the prompt text a model's released chat
// template produces, and parsing the model's answer back into reasoning, content and tool calls
// (server-api.md §14). Three formats (ChatFormat): Gemma 4 (below, the default), Gemma 3
// (chat_gemma3.cc: "<start_of_turn>user\n...<end_of_turn>\n", no tools, no thinking), and none
// for a model that ships no chat template (RenderChat refuses; only raw completions work).
//
// Gemma 4 (gemma4.md §4.3):
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

class GgufFile;

enum class ChatFormat {
  kGemma4,  // "<|turn>user\n...<turn|>\n", tools, thinking (the flags below apply)
  kGemma3,  // "<start_of_turn>user\n...<end_of_turn>\n", Google's Gemma 3 template
  kNone,    // no chat template: RenderChat fails with FailedPrecondition
};

// "gemma4", "gemma3", "none" (for logs and /v1/models).
std::string_view ChatFormatName(ChatFormat format);

struct ChatStyle {
  ChatFormat format = ChatFormat::kGemma4;
  // Gemma 4 only. 26B/31B form: with thinking off, the generation prompt pre-closes an empty
  // thought block.
  bool empty_thought_in_generation_prompt = false;
  // Gemma 4 only. "<|think|>\n" (current templates) or "<|think|>" (earlier revisions).
  bool newline_after_think = true;
  // How the style was chosen, for logs: "chat_template.jinja", "config.json (...)", "default".
  std::string source = "default";
};

// The style a chat template's text implies. A template that writes "<|turn>" is Gemma 4: the
// empty-thought form if it writes '<|channel>thought\n<channel|>' (as Jinja source, "\n" escaped
// or not); no newline after <|think|> if it writes '<|think|>' immediately closed by a quote.
// Otherwise one that writes "<start_of_turn>" is Gemma 3. Any other text: Gemma 4 as above.
ChatStyle ChatStyleFromTemplate(std::string_view jinja);

// Reads model_dir/chat_template.jinja, else tokenizer_config.json's "chat_template" (a string,
// or a list of {name, template} where "default" is used), and decides by ChatStyleFromTemplate.
// Without a template, config.json decides: a model_type starting with "gemma3" (gemma3,
// gemma3_text) has no chat format (ChatFormat::kNone); otherwise Gemma 4, per-layer embeddings
// (hidden_size_per_layer_input > 0) meaning E2B/E4B (plain prompt), else the large-model form.
// Without any of these files: the Gemma 4 E2B/E4B form.
StatusOr<ChatStyle> DetectChatStyle(const std::string& model_dir);

// The chat style tokenizer.chat_template implies (ChatStyleFromTemplate). Without a template:
// general.architecture "gemma4" (or absent) keeps the Gemma 4 format, per-layer embeddings
// (gemma4.embedding_length_per_layer_input > 0) meaning the E2B/E4B form, else the 26B/31B form;
// any other architecture (gemma3: Google's base-model GGUFs carry no template) gets
// ChatFormat::kNone, which RenderChat refuses.
StatusOr<ChatStyle> ChatStyleFromGguf(const GgufFile& file);

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
//
// options.style.format picks the format. kGemma3 renders what Google's Gemma 3 template renders
// (checked against it with Python Jinja): "<bos>", then "<start_of_turn>{user|model}\n{trimmed
// content}<end_of_turn>\n" per message, the first system (or developer) message's text, as is,
// plus "\n\n" in front of the first user turn's content, and "<start_of_turn>model\n" as the
// generation prompt. Like the template it requires user/assistant alternation starting with a
// user message (a later system message takes an assistant's place), and renders image parts as
// "<start_of_image>". It refuses tools, tool_calls and tool messages (Gemma 3 has no tool syntax)
// and null content with InvalidArgument; enable_thinking is ignored. kNone: FailedPrecondition
// ("... has no chat template ...; use /v1/completions").
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

// One call from the text between "<|tool_call>" and "<tool_call|>": "call:NAME{...}", also
// "NAME{...}" or NAME alone; the arguments in Gemma's value syntax (tool_syntax::ParseValue).
ParsedToolCall ParseToolCallBody(std::string_view body);

}  // namespace g4
