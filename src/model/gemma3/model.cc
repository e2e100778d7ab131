#include "model/gemma3/model.h"

#include <cmath>

#include "model/decoder/blocks.h"
#include "model/gemma3/config.h"
#include "model/gemma3/tensors.h"

namespace g4 {

StatusOr<std::unique_ptr<Gemma3Model>> Gemma3Model::Create(
    std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(ModelConfig config, Gemma3ConfigFromCheckpoint(*checkpoint));
  const bool hf_norms = !checkpoint->is_gguf();
  std::unique_ptr<Gemma3Model> m(new Gemma3Model());
  G4_RETURN_IF_ERROR(m->Bind(std::move(checkpoint), std::move(config), "gemma3",
                             &ListGemma3Tensors, options));
  if (hf_norms) {  // x * (1 + w): every RMSNorm weight, q/k norms included
    ModelWeights& w = m->mutable_weights();
    G4_ASSIGN_OR_RETURN(w.final_norm, OffsetCopy(w.final_norm, 1.0f, &w));
    for (LayerWeights& l : w.layers) {
      for (TensorView* norm : {&l.input_norm, &l.post_attn_norm, &l.pre_ff_norm, &l.post_ff_norm,
                               &l.q_norm, &l.k_norm}) {
        G4_ASSIGN_OR_RETURN(*norm, OffsetCopy(*norm, 1.0f, &w));
      }
    }
  }
  return m;
}

Status Gemma3Model::RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                           const std::vector<int64_t>& row_begin, int64_t N,
                           ForwardTrace* trace) const {
  const ModelConfig& c = config();
  const ModelWeights& w = weights();
  DecoderPass pass(be, ws, c, items, row_begin, N);
  G4_RETURN_IF_ERROR(
      pass.Embed(w.embed, static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)))));
  if (trace) {
    trace->ple.clear();
    trace->hidden.clear();
    G4_RETURN_IF_ERROR(pass.RecordHidden(trace));
  }
  G4_RETURN_IF_ERROR(pass.PreNorm(w.layers.front().input_norm));
  for (const LayerConfig& l : c.layers) {
    const size_t i = static_cast<size_t>(l.index);
    const TensorView* next_input_norm = i + 1 < w.layers.size() ? &w.layers[i + 1].input_norm
                                                                : nullptr;
    G4_RETURN_IF_ERROR(pass.Attention(l, w.layers[i], InvFreq(ws, l.index)));
    G4_RETURN_IF_ERROR(pass.Mlp(w.layers[i], 1.0f, next_input_norm));
    if (trace) G4_RETURN_IF_ERROR(pass.RecordHidden(trace));
  }
  return pass.Head(w.final_norm, w.lm_head, static_cast<float>(c.final_logit_softcap));
}

}  // namespace g4

