#include "model/gemma4.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "model/gguf_config.h"
#include "model/gguf_weights.h"

namespace g4 {
namespace {

// K/V of one step computed by a layer that owns them: [R, nkv, hd] each, post-norm and
// post-RoPE K, post-norm V; and the view the chunk attends over (the chunk itself without a
// cache; cached history plus the chunk with one). KV-shared layers read their donor's view.
struct LayerKv {
  Buffer<float> k, v;         // the whole batch's rows: [R, nkv, hd]
  std::vector<KvView> views;  // one per batch item
};

}  // namespace

bool Gemma4Model::IsGgufPath(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  return path.ends_with(".gguf") || GgufFile::HasMagic(path);
}

StatusOr<std::unique_ptr<Gemma4Model>> Gemma4Model::LoadGguf(const std::string& path) {
  std::unique_ptr<Gemma4Model> m(new Gemma4Model());
  G4_ASSIGN_OR_RETURN(m->gguf_, GgufFile::Open(path));
  G4_ASSIGN_OR_RETURN(m->config_, ModelConfigFromGguf(*m->gguf_));
  G4_RETURN_IF_ERROR(BindGgufWeights(m->config_, *m->gguf_, &m->weights_));
  m->PrepareRope();
  return m;
}

void Gemma4Model::PrepareRope() {
  rope_inv_freq_.clear();
  rope_at_.clear();
  for (const LayerConfig& l : config_.layers) {
    const std::vector<float> f = config_.InvFreq(l);
    rope_at_.push_back(rope_inv_freq_.size());
    rope_inv_freq_.insert(rope_inv_freq_.end(), f.begin(), f.end());
  }
}

uint64_t Gemma4Model::mapped_bytes() const {
  if (gguf_) return gguf_->size();
  return store_ ? store_->total_bytes() : 0;
}

StatusOr<std::unique_ptr<Gemma4Model>> Gemma4Model::Load(const std::string& dir) {
  if (IsGgufPath(dir)) return LoadGguf(dir);
  std::unique_ptr<Gemma4Model> m(new Gemma4Model());
  G4_ASSIGN_OR_RETURN(m->config_, LoadModelConfig(dir));
  G4_ASSIGN_OR_RETURN(m->store_, WeightStore::OpenDir(dir));
  G4_RETURN_IF_ERROR(BindWeights(m->config_, *m->store_, &m->weights_));
  m->PrepareRope();
  return m;
}

std::string Gemma4Model::WeightDTypes() const {
  std::set<std::string> names;  // e.g. {"bf16", "int4g32/bf16"} for a W4A16 checkpoint
  for (const TensorSlot& s : ListTensors(config_, const_cast<ModelWeights*>(&weights_))) {
    if (s.view && !s.view->empty()) names.insert(StorageName(*s.view));
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

StatusOr<std::vector<float>> Gemma4Model::Forward(Backend& be, std::span<const int32_t> ids,
                                                  const ForwardOptions& opt) const {
  if (opt.start_pos > 0 && !opt.cache) {
    return InvalidArgument("start_pos " + std::to_string(opt.start_pos) +
                           " needs a KV cache holding the earlier positions");
  }
  const BatchItem item{ids, opt.start_pos, opt.cache, opt.last_logits_only};
  G4_ASSIGN_OR_RETURN(std::vector<std::vector<float>> out,
                      ForwardBatch(be, std::span<const BatchItem>(&item, 1), opt.trace));
  return std::move(out[0]);
}

StatusOr<std::vector<std::vector<float>>> Gemma4Model::ForwardBatch(
    Backend& be, std::span<const BatchItem> items, ForwardTrace* trace) const {
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t H = c.hidden_size, L = c.num_layers, P = c.ple_width, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const size_t B = items.size();
  if (B == 0) return InvalidArgument("empty batch");
  if (trace && B != 1) return InvalidArgument("a forward trace records a single sequence");
  // Every activation lives in the backend's memory (a GPU's for kCuda): the host sends the ids,
  // positions and RoPE frequencies in and takes the logits out, nothing else.
  Memory& mem = be.memory();

  // Rows of every item stacked: ids and absolute positions [R]; row_begin[b] = first row of b.
  std::vector<int32_t> ids, pos;
  std::vector<int64_t> row_begin(B + 1, 0);
  for (size_t b = 0; b < B; ++b) {
    const BatchItem& it = items[b];
    const int64_t T = static_cast<int64_t>(it.ids.size());
    if (T == 0) return InvalidArgument("empty input: at least one token id is needed");
    if (it.start_pos < 0 || (!it.cache && (it.start_pos > 0 || B > 1))) {
      return InvalidArgument("a batched or continued sequence needs its KV cache");
    }
    if (it.cache && &it.cache->memory() != &mem) {
      return InvalidArgument(std::string("the KV cache is in ") + it.cache->memory().name() +
                             " memory but the backend computes in " + mem.name() +
                             " memory (create the cache with Backend::memory())");
    }
    if (it.start_pos + T > c.max_position_embeddings) {
      return InvalidArgument("sequence of " + std::to_string(it.start_pos + T) +
                             " tokens is longer than the context (max_position_embeddings = " +
                             std::to_string(c.max_position_embeddings) + ")");
    }
    for (int64_t t = 0; t < T; ++t) {
      const int32_t id = it.ids[static_cast<size_t>(t)];
      if (id < 0 || id >= V || (P > 0 && id >= c.ple_vocab)) {
        return InvalidArgument("token id " + std::to_string(id) + " at position " +
                               std::to_string(t) + " is outside the vocabulary of " +
                               std::to_string(V));
      }
      ids.push_back(id);
      pos.push_back(it.start_pos + static_cast<int32_t>(t));
    }
    row_begin[b + 1] = row_begin[b] + T;
  }
  const int64_t R = row_begin[B];
  auto rows = [](int64_t n) { return static_cast<size_t>(n); };

  // The inputs in the backend's memory: ids, positions, and every layer's RoPE frequencies.
  Buffer<int32_t> d_ids(mem), d_pos(mem);
  G4_RETURN_IF_ERROR(d_ids.Assign(ids));
  G4_RETURN_IF_ERROR(d_pos.Assign(pos));
  Buffer<float> d_inv_freq(mem);
  G4_RETURN_IF_ERROR(d_inv_freq.Assign(rope_inv_freq_));

  // §2.1 scaled embedding. x0 = h: [R, H]
  Buffer<float> h(mem);
  G4_RETURN_IF_ERROR(h.Allocate(rows(R * H)));
  be.Embed(w.embed, d_ids.data(), R, static_cast<float>(std::sqrt(static_cast<double>(H))),
           h.data());

  // §2.2 per-layer inputs. ple: [R, L, P]
  Buffer<float> ple(mem);
  if (P > 0) {
    Buffer<float> table(mem);
    G4_RETURN_IF_ERROR(table.Allocate(rows(R * L * P)));
    G4_RETURN_IF_ERROR(ple.Allocate(table.size()));
    be.Embed(w.ple_embed, d_ids.data(), R, static_cast<float>(std::sqrt(static_cast<double>(P))),
             table.data());
    be.MatMul(w.ple_model_proj, h.data(), R, ple.data());
    be.Scale(ple.data(), R * L * P, static_cast<float>(1.0 / std::sqrt(static_cast<double>(H))));
    be.RmsNorm(ple.data(), w.ple_proj_norm, R * L, P, eps, ple.data());
    be.Add(ple.data(), table.data(), R * L * P, ple.data());
    be.Scale(ple.data(), R * L * P, static_cast<float>(1.0 / std::sqrt(2.0)));
  }
  // Appends the residual stream h to trace->hidden (a copy to the host).
  auto record_hidden = [&]() -> Status {
    const size_t at = trace->hidden.size();
    trace->hidden.resize(at + h.size());
    return mem.Download(trace->hidden.data() + at, h.data(), h.bytes());
  };
  if (trace) {
    trace->ple.resize(ple.size());
    if (P > 0) G4_RETURN_IF_ERROR(mem.Download(trace->ple.data(), ple.data(), ple.bytes()));
    trace->hidden.clear();
    G4_RETURN_IF_ERROR(record_hidden());
  }

  // kv[layer].views[b]: what item b attends over at a layer that owns K/V (§2.5: shared layers
  // read their donor's entry).
  std::vector<LayerKv> kv(static_cast<size_t>(L));
  Buffer<float> a(mem), o(mem), q(mem), attn(mem), gate(mem), up(mem), g(mem);
  G4_RETURN_IF_ERROR(a.Allocate(rows(R * H)));
  G4_RETURN_IF_ERROR(o.Allocate(rows(R * H)));
  for (const LayerConfig& l : c.layers) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l.index)];
    const int64_t hd = l.head_dim, nq = l.n_heads, nkv = l.n_kv_heads, I = l.mlp_width;
    const float* inv_freq = d_inv_freq.data() + rope_at_[static_cast<size_t>(l.index)];

    // §2.3 attention block: h += post_attn_norm(o_proj(attend(input_norm(h))))
    be.RmsNorm(h.data(), lw.input_norm, R, H, eps, a.data());
    G4_RETURN_IF_ERROR(q.Allocate(rows(R * nq * hd)));              // q: [R, nq, hd]
    be.MatMul(lw.q_proj, a.data(), R, q.data());
    be.RmsNorm(q.data(), lw.q_norm, R * nq, hd, eps, q.data());
    be.Rope(q.data(), d_pos.data(), R, nq, hd, inv_freq);
    if (!l.kv_shared()) {  // §2.4: this layer owns its K/V
      LayerKv& own = kv[static_cast<size_t>(l.index)];
      own.k = Buffer<float>(mem);
      own.v = Buffer<float>(mem);
      G4_RETURN_IF_ERROR(own.k.Allocate(rows(R * nkv * hd)));       // k, v: [R, nkv, hd]
      G4_RETURN_IF_ERROR(own.v.Allocate(own.k.size()));
      be.MatMul(lw.k_proj, a.data(), R, own.k.data());
      if (l.has_v_proj) {
        be.MatMul(lw.v_proj, a.data(), R, own.v.data());
      } else {  // attention_k_eq_v: V is the raw K projection, before k_norm and RoPE
        G4_RETURN_IF_ERROR(mem.Copy(own.v.data(), own.k.data(), own.k.bytes()));
      }
      be.RmsNorm(own.k.data(), lw.k_norm, R * nkv, hd, eps, own.k.data());
      be.Rope(own.k.data(), d_pos.data(), R, nkv, hd, inv_freq);
      be.RmsNorm(own.v.data(), TensorView{}, R * nkv, hd, eps, own.v.data());  // no weight
      own.views.resize(B);
      for (size_t b = 0; b < B; ++b) {
        const int64_t r0 = row_begin[b], T = row_begin[b + 1] - r0;
        const float* k = own.k.data() + r0 * nkv * hd;
        const float* v = own.v.data() + r0 * nkv * hd;
        if (items[b].cache) {
          G4_ASSIGN_OR_RETURN(own.views[b],
                              items[b].cache->Update(l.index, k, v, pos.data() + r0, T));
        } else {
          own.views[b] = KvView{k, v, d_pos.data() + r0, T};
        }
      }
    }
    const std::vector<KvView>& views = kv[static_cast<size_t>(l.kv_source)].views;
    G4_RETURN_IF_ERROR(attn.Allocate(q.size()));                    // attn: [R, nq, hd]
    for (size_t b = 0; b < B; ++b) {
      const int64_t r0 = row_begin[b];
      AttentionArgs args;
      args.q = q.data() + r0 * nq * hd;
      args.k = views[b].k;
      args.v = views[b].v;
      args.q_pos = d_pos.data() + r0;
      args.k_pos = views[b].pos;
      args.T = row_begin[b + 1] - r0;
      args.S = views[b].S;
      args.n_heads = nq;
      args.n_kv_heads = nkv;
      args.head_dim = hd;
      args.window = l.sliding() ? c.sliding_window : 0;
      args.scale = 1.0f;  // Gemma 4: no 1/sqrt(d); q_norm/k_norm set the scale
      args.out = attn.data() + r0 * nq * hd;
      be.Attention(args);
    }
    be.MatMul(lw.o_proj, attn.data(), R, o.data());
    be.RmsNorm(o.data(), lw.post_attn_norm, R, H, eps, o.data());
    be.Add(h.data(), o.data(), R * H, h.data());

    // MLP block: h += post_ff_norm(down(gelu(gate(x)) * up(x))), x = pre_ff_norm(h)
    be.RmsNorm(h.data(), lw.pre_ff_norm, R, H, eps, a.data());
    G4_RETURN_IF_ERROR(gate.Allocate(rows(R * I)));                 // gate, up: [R, I]
    G4_RETURN_IF_ERROR(up.Allocate(gate.size()));
    be.MatMul(lw.gate_proj, a.data(), R, gate.data());
    be.MatMul(lw.up_proj, a.data(), R, up.data());
    be.GeluMul(gate.data(), up.data(), R * I, gate.data());
    be.MatMul(lw.down_proj, gate.data(), R, o.data());
    be.RmsNorm(o.data(), lw.post_ff_norm, R, H, eps, o.data());
    be.Add(h.data(), o.data(), R * H, h.data());

    // PLE injection: h += post_ple_norm(ple_proj(gelu(ple_gate(h)) * ple[:, i, :]))
    if (P > 0) {
      G4_RETURN_IF_ERROR(g.Allocate(rows(R * P)));                  // g: [R, P]
      be.MatMul(lw.ple_gate, h.data(), R, g.data());
      for (int64_t r = 0; r < R; ++r) {
        const float* ple_ri = ple.data() + (r * L + l.index) * P;
        be.GeluMul(g.data() + r * P, ple_ri, P, g.data() + r * P);
      }
      be.MatMul(lw.ple_proj, g.data(), R, o.data());
      be.RmsNorm(o.data(), lw.ple_norm, R, H, eps, o.data());
      be.Add(h.data(), o.data(), R * H, h.data());
    }
    be.Scale(h.data(), R * H, lw.layer_scalar.at(0));  // scales the whole residual stream
    if (trace) G4_RETURN_IF_ERROR(record_hidden());
  }

  // §2.9 final norm, tied head (unscaled embedding), softcap — for the rows that need logits,
  // gathered so the head's weights are read once for the whole batch (each item's rows are
  // consecutive: one copy per item).
  Buffer<float> y(mem);                                             // y: [N, H]
  int64_t N = 0;
  for (size_t b = 0; b < B; ++b) {
    N += items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
  }
  G4_RETURN_IF_ERROR(y.Allocate(rows(N * H)));
  for (size_t b = 0, next = 0; b < B; ++b) {
    const int64_t first = items[b].last_logits_only ? row_begin[b + 1] - 1 : row_begin[b];
    const int64_t n = row_begin[b + 1] - first;
    G4_RETURN_IF_ERROR(mem.Copy(y.data() + next * H, h.data() + first * H,
                                rows(n * H) * sizeof(float)));
    next += static_cast<size_t>(n);
  }
  be.RmsNorm(y.data(), w.final_norm, N, H, eps, y.data());
  Buffer<float> logits(mem);                                        // logits: [N, V]
  G4_RETURN_IF_ERROR(logits.Allocate(rows(N * V)));
  be.MatMul(w.lm_head, y.data(), N, logits.data());
  if (c.final_logit_softcap > 0) {
    be.Softcap(logits.data(), N * V, static_cast<float>(c.final_logit_softcap));
  }
  // The one copy out; on a device it also reports any failure of the step's kernels.
  std::vector<float> host_logits(logits.size());
  G4_RETURN_IF_ERROR(mem.Download(host_logits.data(), logits.data(), logits.bytes()));
  std::vector<std::vector<float>> out(B);
  int64_t next = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t n = items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
    out[b].assign(host_logits.begin() + next * V, host_logits.begin() + (next + n) * V);
    next += n;
  }
  return out;
}

}  // namespace g4
