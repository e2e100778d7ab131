#include "runtime/sequence.h"

#include <algorithm>
#include <limits>

namespace g4 {

Status ValidateGenerationOptions(const GenerationOptions& o, bool have_detokenizer) {
  G4_RETURN_IF_ERROR(o.sampling.Validate());
  G4_RETURN_IF_ERROR(o.degeneracy.Validate());
  if (o.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0");
  if (o.prefill_chunk <= 0) return InvalidArgument("prefill_chunk must be > 0");
  if (!o.stop_strings.empty() && !have_detokenizer) {
    return InvalidArgument("stop strings need a detokenizer (decode_piece)");
  }
  if (o.grammar.grammar != nullptr && o.grammar.vocab == nullptr) {
    return InvalidArgument("grammar needs the tokenizer's vocabulary index (grammar.vocab)");
  }
  return Status::Ok();
}

Sequence::Sequence(std::vector<int32_t> prompt, const GenerationOptions& options,
                   std::function<std::string(int32_t)> decode_piece)
    : prompt_(std::move(prompt)),
      options_(options),
      decode_piece_(std::move(decode_piece)),
      sampler_(options.sampling),
      stop_(options.stop_ids, options.stop_strings, options.ignore_eos),
      loop_check_(options.degeneracy) {
  if (options_.max_tokens == 0) result_.finish_reason = "length";
  if (options_.grammar.grammar != nullptr && options_.grammar.vocab != nullptr) {
    std::vector<int32_t> end_ids;
    if (!options_.ignore_eos) end_ids = options_.stop_ids;
    matcher_.emplace(options_.grammar.grammar, options_.grammar.vocab, std::move(end_ids));
    grammar_active_ = options_.grammar.trigger_token < 0;
  }
}

std::span<const float> Sequence::Mask(std::span<const float> logits, bool* any) {
  *any = true;
  if (!matcher_ || !grammar_active_) return logits;
  mask_.assign(static_cast<size_t>(options_.grammar.vocab->vocab_size()), 0);
  matcher_->FillMask(mask_);
  masked_.assign(logits.size(), -std::numeric_limits<float>::infinity());
  const size_t n = std::min(mask_.size(), logits.size());
  *any = false;
  for (size_t i = 0; i < n; ++i) {
    if (mask_[i]) {
      masked_[i] = logits[i];
      *any = true;
    }
  }
  return masked_;
}

Sequence::Step Sequence::Accept(std::span<const float> logits, bool room) {
  Step step;
  if (finished()) return step;
  bool any = true;
  const std::span<const float> allowed = Mask(logits, &any);
  if (!any) {  // the grammar is done and has no end id to offer
    result_.finish_reason = "stop";
    step.text = stop_.Flush();
    result_.text += step.text;
    step.finished = true;
    return step;
  }
  step.token = sampler_.Sample(allowed, prompt_, result_.tokens);
  if (matcher_) {
    if (grammar_active_) {
      matcher_->Accept(step.token);  // allowed by the mask, so accepted
    } else if (step.token == options_.grammar.trigger_token) {
      grammar_active_ = matcher_->Accept(step.token);
    }
  }
  ++result_.sampled;
  const std::string piece = decode_piece_ ? decode_piece_(step.token) : std::string();
  const StopResult s = stop_.Feed(step.token, piece);
  if (s.reason != "stop_id") {  // a stop id ends generation and is not part of the output
    result_.tokens.push_back(step.token);
    loop_check_.Push(step.token);
  }
  step.text = s.emit;
  result_.degeneracy = loop_check_.verdict();
  if (s.stop) {
    result_.finish_reason = "stop";
  } else if (loop_check_.tripped() && options_.stop_on_degenerate) {
    result_.finish_reason = "degenerate";
    step.text += stop_.Flush();  // as for "length": no stop string came, the text is the answer
  } else if (static_cast<int>(result_.tokens.size()) >= options_.max_tokens || !room) {
    result_.finish_reason = "length";
    step.text += stop_.Flush();  // text held back for a stop string that never came
  }
  result_.text += step.text;
  step.finished = finished();
  return step;
}

void Sequence::Finish(const std::string& reason) {
  if (!finished()) result_.finish_reason = reason;
}

}  // namespace g4
