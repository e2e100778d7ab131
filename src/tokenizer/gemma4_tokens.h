// Gemma 4's control tokens: names and ids as gemma4.md §4.2 and formats.md §3.3 list them, and
// the 19 Gemma 3 slots they occupy. Used by the chat format, by the decoder (which of them are
// rendered as text even when special tokens are skipped) and by the Gemma 3 -> Gemma 4 vocabulary
// conversion behind `g4 make-model --tokenizer`.
#pragma once

#include <cstdint>
#include <string_view>

namespace g4::gemma4 {

inline constexpr std::string_view kBos = "<bos>";
inline constexpr std::string_view kEos = "<eos>";
inline constexpr std::string_view kPad = "<pad>";
inline constexpr std::string_view kUnk = "<unk>";
inline constexpr std::string_view kTurnStart = "<|turn>";
inline constexpr std::string_view kTurnEnd = "<turn|>";
inline constexpr std::string_view kThink = "<|think|>";
inline constexpr std::string_view kChannelStart = "<|channel>";
inline constexpr std::string_view kChannelEnd = "<channel|>";
inline constexpr std::string_view kToolStart = "<|tool>";
inline constexpr std::string_view kToolEnd = "<tool|>";
inline constexpr std::string_view kToolCallStart = "<|tool_call>";
inline constexpr std::string_view kToolCallEnd = "<tool_call|>";
inline constexpr std::string_view kToolResponseStart = "<|tool_response>";
inline constexpr std::string_view kToolResponseEnd = "<tool_response|>";
inline constexpr std::string_view kQuote = "<|\"|>";

inline constexpr int32_t kPadId = 0, kEosId = 1, kBosId = 2, kUnkId = 3;
inline constexpr int32_t kTurnStartId = 105, kTurnEndId = 106, kToolResponseStartId = 50;

// The tokens llama.cpp types "user-defined" so that detokenizing renders them as text: an output
// parser must see them even when special tokens are skipped (gemma4.md §4.2).
inline constexpr std::string_view kRenderedAsText[] = {
    kChannelStart, kChannelEnd, kToolCallStart, kToolCallEnd,
    kToolResponseStart, kToolResponseEnd, kQuote};

// Gemma 3 slot -> Gemma 4 token (formats.md §3.3). Everything else is unchanged, except that
// Gemma 3's <image_soft_token> (id 262144, outside the 262,144-entry vocabulary) is gone.
struct SlotRename {
  int32_t id;
  std::string_view gemma3;
  std::string_view gemma4;
};
inline constexpr SlotRename kSlotRenames[] = {
    {46, "<unused40>", "<|tool>"},
    {47, "<unused41>", "<tool|>"},
    {48, "<unused42>", "<|tool_call>"},
    {49, "<unused43>", "<tool_call|>"},
    {50, "<unused44>", "<|tool_response>"},
    {51, "<unused45>", "<tool_response|>"},
    {52, "<unused46>", "<|\"|>"},
    {98, "<unused92>", "<|think|>"},
    {100, "<unused94>", "<|channel>"},
    {101, "<unused95>", "<channel|>"},
    {105, "<start_of_turn>", "<|turn>"},
    {106, "<end_of_turn>", "<turn|>"},
    {255999, "<start_of_image>", "<|image>"},
    {256000, "<end_of_image>", "<|audio>"},
    {258880, "<unused2978>", "<|image|>"},
    {258881, "<unused2979>", "<|audio|>"},
    {258882, "<unused2980>", "<image|>"},
    {258883, "<unused2981>", "<audio|>"},
    {258884, "<unused2982>", "<|video|>"},
};
inline constexpr int32_t kGemma3ImageSoftTokenId = 262144;
inline constexpr int32_t kVocabSize = 262144;

}  // namespace g4::gemma4
