#include "model/gemma4/model.h"

#include <cmath>
#include <string>

#include "model/decoder/blocks.h"
#include "model/gemma4/config.h"
#include "model/gemma4/tensors.h"

namespace g4 {

StatusOr<std::unique_ptr<Gemma4Model>> Gemma4Model::Create(
    std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(ModelConfig config, Gemma4ConfigFromCheckpoint(*checkpoint));
  std::unique_ptr<Gemma4Model> m(new Gemma4Model());
  G4_RETURN_IF_ERROR(m->Bind(std::move(checkpoint), std::move(config), "gemma4", &ListTensors,
                             options));
  if (m->config().moe()) {  // §2.7: the router's input is rms(r) * scale * H^-0.5
    const double H = m->config().hidden_size;
    const float root = static_cast<float>(1.0 / std::sqrt(H));
    for (LayerWeights& lw : m->mutable_weights().layers) {
      G4_ASSIGN_OR_RETURN(lw.router_scale, ScaledCopy(lw.router_scale, root,
                                                      &m->mutable_weights()));
    }
  }
  return m;
}

StatusOr<std::unique_ptr<Gemma4Model>> Gemma4Model::Load(const std::string& path,
                                                         const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(std::shared_ptr<const Checkpoint> checkpoint, Checkpoint::Open(path));
  return Create(std::move(checkpoint), options);
}

Status Gemma4Model::RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                           const std::vector<int64_t>& row_begin, int64_t N,
                           ForwardTrace* trace) const {
  const ModelConfig& c = config();
  const ModelWeights& w = weights();
  const int64_t H = c.hidden_size, L = c.num_layers, P = c.ple_width;
  const float eps = static_cast<float>(c.rms_norm_eps);
  DecoderPass pass(be, ws, c, items, row_begin, N);
  const int64_t R = pass.rows();
  auto rows = [](int64_t n) { return static_cast<size_t>(n); };

  // §2.1 scaled embedding. x0 = h: [R, H]
  G4_RETURN_IF_ERROR(pass.Embed(w.embed, static_cast<float>(std::sqrt(static_cast<double>(H)))));

  // §2.2 per-layer inputs. ple: [R, L, P]
  Buffer<float>& ple = ws.ple;
  const float* h = pass.h().data();
  if (P > 0) {
    Buffer<float>& table = ws.ple_table;
    G4_RETURN_IF_ERROR(table.Allocate(rows(R * L * P)));
    G4_RETURN_IF_ERROR(ple.Allocate(table.size()));
    be.Embed(w.ple_embed, ws.ids.data(), R, static_cast<float>(std::sqrt(static_cast<double>(P))),
             table.data());
    be.MatMul(w.ple_model_proj, h, R, ple.data());
    be.Scale(ple.data(), R * L * P, static_cast<float>(1.0 / std::sqrt(static_cast<double>(H))));
    be.RmsNorm(ple.data(), w.ple_proj_norm, R * L, P, eps, ple.data());
    be.Add(ple.data(), table.data(), R * L * P, ple.data());
    be.Scale(ple.data(), R * L * P, static_cast<float>(1.0 / std::sqrt(2.0)));
  }
  if (trace) {
    trace->ple.resize(P > 0 ? ple.size() : 0);
    if (P > 0) G4_RETURN_IF_ERROR(be.memory().Download(trace->ple.data(), ple.data(), ple.bytes()));
    trace->hidden.clear();
    G4_RETURN_IF_ERROR(pass.RecordHidden(trace));
  }

  G4_RETURN_IF_ERROR(pass.PreNorm(w.layers.front().input_norm));
  for (const LayerConfig& l : c.layers) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l.index)];
    const bool last = static_cast<size_t>(l.index) + 1 == w.layers.size();
    const TensorView* next_input_norm =
        last ? nullptr : &w.layers[static_cast<size_t>(l.index) + 1].input_norm;
    const float layer_scale = lw.layer_scalar.at(0);  // scales the whole residual stream

    // §2.3 attention block; then the MLP block. With PLE the layer ends in the injection below.
    G4_RETURN_IF_ERROR(pass.Attention(l, lw, InvFreq(ws, l.index)));
    const float mlp_scale = P > 0 ? 1.0f : layer_scale;
    const TensorView* mlp_next = P > 0 ? nullptr : next_input_norm;
    G4_RETURN_IF_ERROR(c.moe() ? pass.MoeMlp(lw, mlp_scale, mlp_next)
                               : pass.Mlp(lw, mlp_scale, mlp_next));

    // PLE injection: h += post_ple_norm(ple_proj(gelu(ple_gate(h)) * ple[:, i, :]))
    if (P > 0) {
      Buffer<float>& g = ws.g;
      G4_RETURN_IF_ERROR(g.Allocate(rows(R * P)));  // g: [R, P]
      MatMulGroup ple_gate;  // g = gelu(ple_gate(h)) * ple[:, l]: one op
      ple_gate.w[0] = &lw.ple_gate;
      ple_gate.y[0] = g.data();
      ple_gate.count = 1;
      ple_gate.gelu_up = ple.data() + l.index * P;
      ple_gate.gelu_up_stride = L * P;
      be.GroupedMatMul(ple_gate, h, R);
      pass.Residual(lw.ple_proj, g.data(), lw.ple_norm, layer_scale, next_input_norm);
    }
    if (trace) G4_RETURN_IF_ERROR(pass.RecordHidden(trace));
  }

  // §2.9 final norm, tied head (unscaled embedding), softcap.
  return pass.Head(w.final_norm, w.lm_head, static_cast<float>(c.final_logit_softcap));
}

}  // namespace g4
