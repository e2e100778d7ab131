// Tokenizer: builds the runtime tables from a parsed tokenizer.json and runs the encode / decode
// pipelines described in tokenizer.h.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace g4 {
namespace {

using tokenizer_internal::WordCache;

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  return s;
}
std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::atomic<uint64_t> g_next_serial{1};

bool IsBytePiece(std::string_view p, uint8_t* byte) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(p[3]), lo = hex(p[4]);
  if (hi < 0 || lo < 0) return false;
  *byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

void ReplaceAll(std::string_view in, std::string_view from, std::string_view to, std::string* out) {
  out->clear();
  size_t i = 0;
  while (true) {
    const size_t j = in.find(from, i);
    if (j == std::string_view::npos) break;
    out->append(in.data() + i, j - i);
    out->append(to);
    i = j + from.size();
  }
  out->append(in.data() + i, in.size() - i);
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const TokenizerJson& json,
                                                         const std::string& source) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  G4_RETURN_IF_ERROR(t->Init(json, source));
  return t;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJsonText(std::string_view text,
                                                             const std::string& source) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> json,
                      ParseTokenizerJson(std::string(text), source));
  return FromJson(*json, source);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const std::string file = is_dir ? (fs::path(path) / "tokenizer.json").string() : path;
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> json, ReadTokenizerJson(file));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> t, FromJson(*json, file));
  if (is_dir) {
    const Tokenizer* self = t.get();
    G4_ASSIGN_OR_RETURN(
        SpecialTokenIds ids,
        ReadSpecialTokenIds(path, [self](std::string_view p) { return self->TokenId(p); },
                            t->vocab_size()));
    t->special_ = std::move(ids);
  }
  return t;
}

Status Tokenizer::Init(const TokenizerJson& json, const std::string& source) {
  auto fail = [&](const std::string& m, StatusCode code = StatusCode::kInvalidArgument) {
    return Status(code, source + ": " + m);
  };
  int64_t num_ids = 0;
  size_t bytes = 0;
  for (const auto& [piece, id] : json.vocab) {
    num_ids = std::max<int64_t>(num_ids, int64_t{id} + 1);
    bytes += piece.size();
  }
  for (const AddedTokenSpec& a : json.added_tokens) {
    num_ids = std::max<int64_t>(num_ids, int64_t{a.id} + 1);
    bytes += a.content.size();
  }
  if (num_ids == 0) return fail("model.vocab is empty");
  // Tables below are sized by the largest id: a few entries with a huge id must not cost a
  // large allocation. Real vocabularies are dense; allow holes, but not more holes than ids.
  const int64_t defined = static_cast<int64_t>(json.vocab.size() + json.added_tokens.size());
  if (num_ids > 2 * defined + 1024) {
    return fail("the largest token id is " + std::to_string(num_ids - 1) + " but only " +
                std::to_string(defined) + " tokens are defined (ids must be nearly dense)");
  }
  pieces_.Reset(static_cast<int32_t>(num_ids), bytes);
  for (const auto& [piece, id] : json.vocab) pieces_.Add(id, piece);
  for (const AddedTokenSpec& a : json.added_tokens) {
    // Usually the same piece as in the vocabulary; an added token past the vocabulary (Gemma 3's
    // <image_soft_token>) or one that renames a slot takes the added token's text.
    if (!pieces_.Has(a.id) || pieces_.Piece(a.id) != a.content) pieces_.Add(a.id, a.content);
  }
  pieces_.Finish();

  kinds_.assign(static_cast<size_t>(num_ids), TokenKind::kNormal);
  if (json.decoder_byte_fallback) {
    for (int32_t id = 0; id < num_ids; ++id) {
      uint8_t b;
      if (pieces_.Has(id) && IsBytePiece(pieces_.Piece(id), &b)) kinds_[id] = TokenKind::kByte;
    }
  }
  strip_.assign(static_cast<size_t>(num_ids), 0);
  for (const AddedTokenSpec& a : json.added_tokens) {
    if (a.normalized) {
      for (const Replacement& r : json.normalizer) {
        if (a.content.find(r.from) != std::string_view::npos ||
            a.content.find(r.to) != std::string_view::npos) {
          return fail("added token '" + std::string(a.content) +
                          "' is normalized and contains normalizer text; not supported",
                      StatusCode::kUnimplemented);
        }
      }
    }
    TokenKind kind = a.special ? TokenKind::kSpecial : TokenKind::kAdded;
    if (a.special) {
      for (const std::string_view t : gemma4::kRenderedAsText) {
        if (a.content == t) kind = TokenKind::kSpecialAsText;
      }
    }
    kinds_[a.id] = kind;
    strip_[a.id] = static_cast<uint8_t>((a.lstrip ? 1 : 0) | (a.rstrip ? 2 : 0));
    any_strip_ = any_strip_ || a.lstrip || a.rstrip;
    added_.Add(a.content, a.id, a.special);
  }

  decoded_.clear();
  decoded_.reserve(bytes);
  decoded_begin_.assign(static_cast<size_t>(num_ids) + 1, 0);
  std::string tmp, tmp2;
  for (int32_t id = 0; id < num_ids; ++id) {
    decoded_begin_[id] = static_cast<uint32_t>(decoded_.size());
    if (!pieces_.Has(id)) continue;
    const std::string_view piece = pieces_.Piece(id);
    uint8_t b;
    if (kinds_[id] == TokenKind::kByte && IsBytePiece(piece, &b)) {
      decoded_.push_back(static_cast<char>(b));
      continue;
    }
    tmp.assign(piece);
    for (const Replacement& r : json.decoder_replacements) {
      if (tmp.find(r.from) == std::string::npos) continue;
      ReplaceAll(tmp, r.from, r.to, &tmp2);
      tmp.swap(tmp2);
    }
    decoded_ += tmp;
  }
  decoded_begin_[num_ids] = static_cast<uint32_t>(decoded_.size());

  BpeOptions bo;
  bo.byte_fallback = json.byte_fallback;
  bo.fuse_unk = json.fuse_unk;
  bo.ignore_merges = json.ignore_merges;
  bo.unk_id = json.unk_token.empty() ? -1 : pieces_.Find(json.unk_token);
  if (!json.unk_token.empty() && bo.unk_id < 0) {
    return fail("model.unk_token '" + json.unk_token + "' is not in model.vocab");
  }
  const Status s = bpe_.Build(&pieces_, json.merges, bo);
  if (!s.ok()) return fail(s.message());

  normalizer_ = json.normalizer;
  split_after_ = json.split_after;
  FindSpaceJoiners();
  serial_ = g_next_serial.fetch_add(1);
  special_ = DefaultSpecialTokenIds([this](std::string_view p) { return TokenId(p); },
                                    vocab_size());
  return Status::Ok();
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  EncodeTo(text, options, &ids);
  return ids;
}

void Tokenizer::EncodeTo(std::string_view text, const EncodeOptions& options,
                         std::vector<int32_t>* ids) const {
  const size_t first = ids->size();
  size_t pos = 0;
  bool strip_next_left = false;  // the previous added token has rstrip
  AddedTokenMatcher::Match m;
  while (pos <= text.size()) {
    const bool found = added_.FindNext(text, pos, options.parse_special, &m);
    std::string_view seg = text.substr(pos, (found ? m.begin : text.size()) - pos);
    if (any_strip_) {
      if (strip_next_left) seg = TrimLeft(seg);
      if (found && (strip_[m.id] & 1)) seg = TrimRight(seg);
    }
    EncodeSegment(seg, ids);
    if (!found) break;
    ids->push_back(m.id);
    strip_next_left = any_strip_ && (strip_[m.id] & 2);
    pos = m.begin + m.length;
  }
  if (options.add_bos && special_.bos >= 0 &&
      (ids->size() == first || (*ids)[first] != special_.bos)) {
    ids->insert(ids->begin() + static_cast<std::ptrdiff_t>(first), special_.bos);
  }
}

void Tokenizer::EncodeSegment(std::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return;
  thread_local std::string norm, tmp;
  std::string_view s = text;
  if (!normalizer_.empty()) {
    norm.assign(text);
    for (const Replacement& r : normalizer_) {
      if (norm.find(r.from) == std::string::npos) continue;
      ReplaceAll(norm, r.from, r.to, &tmp);
      norm.swap(tmp);
    }
    s = norm;
  }
  if (split_after_.empty()) {
    EncodeNormalized(s, ids);
    return;
  }
  size_t i = 0;
  while (i < s.size()) {
    const size_t j = s.find(split_after_, i);
    const size_t end = j == std::string_view::npos ? s.size() : j + split_after_.size();
    EncodeNormalized(s.substr(i, end - i), ids);
    i = end;
  }
}

void Tokenizer::EncodeNormalized(std::string_view s, std::vector<int32_t>* ids) const {
  // Runs of '\n' and runs of anything else ([^\n]+|[\n]+); a newline run that is a piece stays
  // one token even where BPE would split it differently.
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\n') {
      size_t j = i;
      while (j < s.size() && s[j] == '\n') ++j;
      const std::string_view run = s.substr(i, j - i);
      const int32_t id = pieces_.Find(run);
      if (id >= 0) {
        ids->push_back(id);
      } else {
        EncodeWord(run, ids);
      }
      i = j;
    } else {
      const void* nl = std::memchr(s.data() + i, '\n', s.size() - i);
      const size_t j = nl ? static_cast<size_t>(static_cast<const char*>(nl) - s.data()) : s.size();
      EncodeLine(s.substr(i, j - i), ids);
      i = j;
    }
  }
}

void Tokenizer::FindSpaceJoiners() {
  space_symbol_.clear();
  space_joiners_.clear();
  for (const Replacement& r : normalizer_) {
    uint32_t cp;
    if (r.from == " " && !r.to.empty() && utf8::DecodeOne(r.to, &cp) == r.to.size()) {
      space_symbol_ = r.to;
    }
  }
  if (space_symbol_.empty()) return;
  uint32_t space_cp = 0;
  utf8::DecodeOne(space_symbol_, &space_cp);
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (!pieces_.Has(id)) continue;
    const std::string_view p = pieces_.Piece(id);
    for (size_t k = p.find(space_symbol_); k != std::string_view::npos;
         k = p.find(space_symbol_, k + 1)) {
      if (k == 0) continue;
      size_t b = k - 1;  // start of the previous character
      while (b > 0 && (static_cast<uint8_t>(p[b]) & 0xC0) == 0x80) --b;
      uint32_t prev = UINT32_MAX;
      if (utf8::DecodeOne(p.substr(b, k - b), &prev) != k - b) prev = UINT32_MAX;
      if (prev != space_cp) space_joiners_.push_back(prev);
    }
  }
  std::sort(space_joiners_.begin(), space_joiners_.end());
  space_joiners_.erase(std::unique(space_joiners_.begin(), space_joiners_.end()),
                       space_joiners_.end());
  // An invalid byte sequence before "▁" inside a piece cannot be judged; play safe.
  if (!space_joiners_.empty() && space_joiners_.back() == UINT32_MAX) space_symbol_.clear();
}

void Tokenizer::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.size() > WordCache::kMaxWordBytes) {
    bpe_.Encode(word, ids);
    return;
  }
  WordCache& cache = WordCache::ForThread(serial_);
  if (cache.Lookup(word, ids)) return;
  const size_t before = ids->size();
  bpe_.Encode(word, ids);
  cache.Insert(word, ids->data() + before, ids->size() - before);
}

void Tokenizer::EncodeLine(std::string_view s, std::vector<int32_t>* ids) const {
  if (space_symbol_.empty()) {
    EncodeWord(s, ids);
    return;
  }
  size_t start = 0;
  for (size_t k = s.find(space_symbol_, 1); k != std::string_view::npos;
       k = s.find(space_symbol_, k + 1)) {
    size_t b = k - 1;
    while (b > start && (static_cast<uint8_t>(s[b]) & 0xC0) == 0x80) --b;
    uint32_t prev = 0;
    if (utf8::DecodeOne(s.substr(b, k - b), &prev) != k - b) continue;  // invalid bytes: no cut
    if (s.compare(b, k - b, space_symbol_) == 0) continue;                // "▁▁" runs merge
    if (std::binary_search(space_joiners_.begin(), space_joiners_.end(), prev)) continue;
    EncodeWord(s.substr(start, k - start), ids);
    start = k;
  }
  EncodeWord(s.substr(start), ids);
}

Status Tokenizer::AppendDecoded(int32_t id, const DecodeOptions& options, std::string* out) const {
  if (id < 0 || id >= vocab_size() || !pieces_.Has(id)) {
    return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                           std::to_string(vocab_size()) + ")");
  }
  if (options.skip_special && kinds_[id] == TokenKind::kSpecial) return Status::Ok();
  out->append(decoded_.data() + decoded_begin_[id], decoded_begin_[id + 1] - decoded_begin_[id]);
  return Status::Ok();
}

StatusOr<std::string> Tokenizer::Decode(std::span<const int32_t> ids,
                                        const DecodeOptions& options) const {
  std::string out;
  out.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    const Status s = AppendDecoded(ids[i], options, &out);
    if (!s.ok()) return s.WithContext("decode: position " + std::to_string(i));
  }
  return out;
}

bool Tokenizer::IsWordToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || kinds_[id] == TokenKind::kByte ||
      kinds_[id] == TokenKind::kSpecial || kinds_[id] == TokenKind::kSpecialAsText) {
    return false;
  }
  std::string_view text(decoded_.data() + decoded_begin_[id],
                        decoded_begin_[id + 1] - decoded_begin_[id]);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty()) return false;
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x80 && !std::isalpha(c)) return false;
  }
  return true;
}

}  // namespace g4
