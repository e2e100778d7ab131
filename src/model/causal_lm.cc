#include "model/causal_lm.h"

#include <set>

namespace g4 {
namespace {

// Bytes one decode step reads of `w`: one row of a gathered table, else the whole tensor.
uint64_t DecodeBytes(const WeightEntry& w) {
  const TensorView& v = *w.view;
  if (w.gathered) return v.nbytes() / static_cast<uint64_t>(v.dim(0));
  const uint64_t all = v.nbytes() + v.scale_nbytes();
  if (w.experts_read > 0) return all / static_cast<uint64_t>(v.dim(0)) * w.experts_read;
  return all;
}

}  // namespace

StatusOr<std::vector<float>> CausalLM::Forward(Backend& backend, std::span<const int32_t> ids,
                                               const ForwardOptions& opt) const {
  if (opt.start_pos > 0 && !opt.cache) {
    return InvalidArgument("start_pos " + std::to_string(opt.start_pos) +
                           " needs a KV cache holding the earlier positions");
  }
  const BatchItem item{ids, opt.start_pos, opt.cache, opt.last_logits_only};
  G4_ASSIGN_OR_RETURN(std::vector<std::vector<float>> out,
                      ForwardBatch(backend, std::span<const BatchItem>(&item, 1), opt.trace,
                                   opt.graphs));
  return std::move(out[0]);
}

uint64_t DecodeWeightBytes(const CausalLM& model) {
  uint64_t bytes = 0;
  for (const WeightEntry& w : model.Weights()) {
    if (w.view && !w.view->empty()) bytes += DecodeBytes(w);
  }
  const TensorView& head = model.lm_head();
  return bytes + head.nbytes() + head.scale_nbytes();
}

std::map<std::string, uint64_t> DecodeBytesByStorage(const CausalLM& model) {
  std::map<std::string, uint64_t> out;
  for (const WeightEntry& w : model.Weights()) {
    if (w.view && !w.view->empty()) out[StorageName(*w.view)] += DecodeBytes(w);
  }
  const TensorView& head = model.lm_head();
  out[StorageName(head) + " (lm head)"] += head.nbytes() + head.scale_nbytes();
  return out;
}

std::string WeightDTypes(const CausalLM& model) {
  std::set<std::string> names;  // e.g. {"bf16", "int4g32/bf16"} for a W4A16 checkpoint
  for (const WeightEntry& w : model.Weights()) {
    if (w.view && !w.view->empty()) names.insert(StorageName(*w.view));
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

double LinearFlopsPerToken(const CausalLM& model) {
  double flops = 0;
  for (const WeightEntry& w : model.Weights()) {
    if (w.view && !w.view->empty() && w.experts_read > 0) {  // [E, N, K]: k of the E
      flops += 2.0 * static_cast<double>(w.experts_read) * static_cast<double>(w.view->dim(1)) *
               static_cast<double>(w.view->dim(2));
    } else if (w.linear && w.view && !w.view->empty()) {
      flops += 2.0 * static_cast<double>(w.view->dim(0)) * static_cast<double>(w.view->dim(1));
    }
  }
  return flops;
}

int NumKvOwningLayers(const ModelInfo& info) {
  int n = 0;
  for (const KvLayout& l : info.layers) n += l.shared() ? 0 : 1;
  return n;
}

}  // namespace g4
