#include "model/gemma4.h"

#include <cmath>
#include <set>

namespace g4 {
namespace {

// K/V of one chunk computed by a layer that owns them: [T, nkv, hd] each, post-norm and
// post-RoPE K, post-norm V; and the view the chunk attends over (the chunk itself without a
// cache; cached history plus the chunk with one). KV-shared layers read their donor's view.
struct LayerKv {
  std::vector<float> k, v;
  KvView view;
};

}  // namespace

StatusOr<std::unique_ptr<Gemma4Model>> Gemma4Model::Load(const std::string& dir) {
  std::unique_ptr<Gemma4Model> m(new Gemma4Model());
  G4_ASSIGN_OR_RETURN(m->config_, LoadModelConfig(dir));
  G4_ASSIGN_OR_RETURN(m->store_, WeightStore::OpenDir(dir));
  G4_RETURN_IF_ERROR(BindWeights(m->config_, *m->store_, &m->weights_));
  return m;
}

std::string Gemma4Model::WeightDTypes() const {
  std::set<std::string> names;
  for (const TensorSlot& s : ListTensors(config_, const_cast<ModelWeights*>(&weights_))) {
    if (s.view && !s.view->empty()) names.insert(DTypeName(s.view->dtype));
  }
  std::string out;
  for (const std::string& n : names) {
    std::string lower;
    for (char ch : n) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out += (out.empty() ? "" : "+") + lower;
  }
  return out;
}

StatusOr<std::vector<float>> Gemma4Model::Forward(Backend& be, std::span<const int32_t> ids,
                                                  const ForwardOptions& opt) const {
  ForwardTrace* trace = opt.trace;
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t T = static_cast<int64_t>(ids.size());
  const int64_t H = c.hidden_size, L = c.num_layers, P = c.ple_width, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (T == 0) return InvalidArgument("empty input: at least one token id is needed");
  if (opt.start_pos < 0 || (opt.start_pos > 0 && !opt.cache)) {
    return InvalidArgument("start_pos " + std::to_string(opt.start_pos) +
                           " needs a KV cache holding the earlier positions");
  }
  if (opt.start_pos + T > c.max_position_embeddings) {
    return InvalidArgument("sequence of " + std::to_string(opt.start_pos + T) +
                           " tokens is longer than the context (max_position_embeddings = " +
                           std::to_string(c.max_position_embeddings) + ")");
  }
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = ids[static_cast<size_t>(t)];
    if (id < 0 || id >= V || (P > 0 && id >= c.ple_vocab)) {
      return InvalidArgument("token id " + std::to_string(id) + " at position " +
                             std::to_string(t) + " is outside the vocabulary of " +
                             std::to_string(V));
    }
  }
  std::vector<int32_t> pos(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = opt.start_pos + static_cast<int32_t>(t);

  // §2.1 scaled embedding. x0 = h: [T, H]
  std::vector<float> h(static_cast<size_t>(T * H));
  be.Embed(w.embed, ids.data(), T, static_cast<float>(std::sqrt(static_cast<double>(H))), h.data());

  // §2.2 per-layer inputs. ple: [T, L, P]
  std::vector<float> ple;
  if (P > 0) {
    std::vector<float> table(static_cast<size_t>(T * L * P));
    be.Embed(w.ple_embed, ids.data(), T, static_cast<float>(std::sqrt(static_cast<double>(P))),
             table.data());
    ple.resize(table.size());
    be.MatMul(w.ple_model_proj, h.data(), T, ple.data());
    be.Scale(ple.data(), T * L * P, static_cast<float>(1.0 / std::sqrt(static_cast<double>(H))));
    be.RmsNorm(ple.data(), w.ple_proj_norm, T * L, P, eps, ple.data());
    be.Add(ple.data(), table.data(), T * L * P, ple.data());
    be.Scale(ple.data(), T * L * P, static_cast<float>(1.0 / std::sqrt(2.0)));
  }
  if (trace) {
    trace->ple = ple;
    trace->hidden.assign(h.begin(), h.end());
  }

  std::vector<LayerKv> kv(static_cast<size_t>(L));
  std::vector<float> a(static_cast<size_t>(T * H)), o(static_cast<size_t>(T * H));
  std::vector<float> q, attn, gate, up, g;
  for (const LayerConfig& l : c.layers) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l.index)];
    const int64_t hd = l.head_dim, nq = l.n_heads, nkv = l.n_kv_heads, I = l.mlp_width;
    const std::vector<float> inv_freq = c.InvFreq(l);

    // §2.3 attention block: h += post_attn_norm(o_proj(attend(input_norm(h))))
    be.RmsNorm(h.data(), lw.input_norm, T, H, eps, a.data());
    q.resize(static_cast<size_t>(T * nq * hd));                      // q: [T, nq, hd]
    be.MatMul(lw.q_proj, a.data(), T, q.data());
    be.RmsNorm(q.data(), lw.q_norm, T * nq, hd, eps, q.data());
    be.Rope(q.data(), pos.data(), T, nq, hd, inv_freq.data());
    if (!l.kv_shared()) {  // §2.4: this layer owns its K/V
      LayerKv& own = kv[static_cast<size_t>(l.index)];
      own.k.resize(static_cast<size_t>(T * nkv * hd));               // k, v: [T, nkv, hd]
      own.v.resize(own.k.size());
      be.MatMul(lw.k_proj, a.data(), T, own.k.data());
      if (l.has_v_proj) {
        be.MatMul(lw.v_proj, a.data(), T, own.v.data());
      } else {
        own.v = own.k;  // attention_k_eq_v: V is the raw K projection, before k_norm and RoPE
      }
      be.RmsNorm(own.k.data(), lw.k_norm, T * nkv, hd, eps, own.k.data());
      be.Rope(own.k.data(), pos.data(), T, nkv, hd, inv_freq.data());
      be.RmsNorm(own.v.data(), TensorView{}, T * nkv, hd, eps, own.v.data());  // no weight
      if (opt.cache) {
        G4_ASSIGN_OR_RETURN(own.view,
                            opt.cache->Update(l.index, own.k.data(), own.v.data(), pos.data(), T));
      } else {
        own.view = KvView{own.k.data(), own.v.data(), pos.data(), T};
      }
    }
    const KvView& src = kv[static_cast<size_t>(l.kv_source)].view;
    attn.resize(q.size());                                           // attn: [T, nq, hd]
    AttentionArgs args;
    args.q = q.data();
    args.k = src.k;
    args.v = src.v;
    args.q_pos = pos.data();
    args.k_pos = src.pos;
    args.T = T;
    args.S = src.S;
    args.n_heads = nq;
    args.n_kv_heads = nkv;
    args.head_dim = hd;
    args.window = l.sliding() ? c.sliding_window : 0;
    args.scale = 1.0f;  // Gemma 4: no 1/sqrt(d); q_norm/k_norm set the scale
    args.out = attn.data();
    be.Attention(args);
    be.MatMul(lw.o_proj, attn.data(), T, o.data());
    be.RmsNorm(o.data(), lw.post_attn_norm, T, H, eps, o.data());
    be.Add(h.data(), o.data(), T * H, h.data());

    // MLP block: h += post_ff_norm(down(gelu(gate(x)) * up(x))), x = pre_ff_norm(h)
    be.RmsNorm(h.data(), lw.pre_ff_norm, T, H, eps, a.data());
    gate.resize(static_cast<size_t>(T * I));                         // gate, up: [T, I]
    up.resize(gate.size());
    be.MatMul(lw.gate_proj, a.data(), T, gate.data());
    be.MatMul(lw.up_proj, a.data(), T, up.data());
    be.GeluMul(gate.data(), up.data(), T * I, gate.data());
    be.MatMul(lw.down_proj, gate.data(), T, o.data());
    be.RmsNorm(o.data(), lw.post_ff_norm, T, H, eps, o.data());
    be.Add(h.data(), o.data(), T * H, h.data());

    // PLE injection: h += post_ple_norm(ple_proj(gelu(ple_gate(h)) * ple[:, i, :]))
    if (P > 0) {
      g.resize(static_cast<size_t>(T * P));                          // g: [T, P]
      be.MatMul(lw.ple_gate, h.data(), T, g.data());
      for (int64_t t = 0; t < T; ++t) {
        const float* ple_ti = ple.data() + (t * L + l.index) * P;
        be.GeluMul(g.data() + t * P, ple_ti, P, g.data() + t * P);
      }
      be.MatMul(lw.ple_proj, g.data(), T, o.data());
      be.RmsNorm(o.data(), lw.ple_norm, T, H, eps, o.data());
      be.Add(h.data(), o.data(), T * H, h.data());
    }
    be.Scale(h.data(), T * H, lw.layer_scalar.at(0));  // scales the whole residual stream
    if (trace) trace->hidden.insert(trace->hidden.end(), h.begin(), h.end());
  }

  // §2.9 final norm, tied head (unscaled embedding), softcap.
  const int64_t rows = opt.last_logits_only ? 1 : T;
  const float* last = h.data() + (T - rows) * H;
  be.RmsNorm(last, w.final_norm, rows, H, eps, a.data());
  std::vector<float> logits(static_cast<size_t>(rows * V));         // logits: [rows, V]
  be.MatMul(w.lm_head, a.data(), rows, logits.data());
  if (c.final_logit_softcap > 0) {
    be.Softcap(logits.data(), rows * V, static_cast<float>(c.final_logit_softcap));
  }
  return logits;
}

}  // namespace g4
