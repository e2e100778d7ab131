#include "model/gemma4.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "model/gguf_config.h"
#include "model/gguf_weights.h"

namespace g4 {

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
                      ForwardBatch(be, std::span<const BatchItem>(&item, 1), opt.trace,
                                   opt.graphs));
  return std::move(out[0]);
}

StatusOr<std::vector<std::vector<float>>> Gemma4Model::ForwardBatch(
    Backend& be, std::span<const BatchItem> items, ForwardTrace* trace,
    StepGraphs* graphs) const {
  const ModelConfig& c = config_;
  const int64_t P = c.ple_width, V = c.vocab_size;
  const size_t B = items.size();
  if (B == 0) return InvalidArgument("empty batch");
  if (trace && B != 1) return InvalidArgument("a forward trace records a single sequence");
  // Every activation lives in the backend's memory (a GPU's for kCuda): the host sends the ids,
  // positions and RoPE frequencies in and takes the logits out, nothing else.
  Memory& mem = be.memory();

  // Rows of every item stacked: ids and absolute positions [R]; row_begin[b] = first row of b.
  std::vector<int32_t> ids, pos;
  std::vector<int64_t> row_begin(B + 1, 0);
  bool decode = !trace;  // one token per item, each with its cache, last logits only
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
    decode = decode && T == 1 && it.cache && it.last_logits_only;
  }
  int64_t N = 0;  // rows that get logits
  for (size_t b = 0; b < B; ++b) {
    N += items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
  }
  // The host's part of the KV writes, before any op: checks, growth, bookkeeping.
  for (size_t b = 0; b < B; ++b) {
    if (!items[b].cache) continue;
    G4_RETURN_IF_ERROR(items[b].cache->Reserve(pos.data() + row_begin[b],
                                               row_begin[b + 1] - row_begin[b]));
  }

  // A decode step with graphs: the buffers of this batch size, and its recording once there
  // is one.
  StepGraphs::Entry* entry = nullptr;
  bool fresh = true;
  std::vector<uint64_t> storage;  // what a recording of this step points to
  // (Not under a profiler: it times ops one by one.)
  if (graphs && decode && be.can_capture() && !be.profiler() && graphs->refused_.empty()) {
    entry = &graphs->Get(static_cast<int64_t>(B), mem, &fresh);
    for (const BatchItem& it : items) storage.push_back(it.cache->storage_id());
  }
  ForwardWorkspace local(mem);
  ForwardWorkspace& ws = entry ? *entry->ws : local;
  G4_RETURN_IF_ERROR(ws.ids.Assign(ids));
  G4_RETURN_IF_ERROR(ws.pos.Assign(pos));
  if (!ws.inv_freq_loaded) {
    G4_RETURN_IF_ERROR(ws.inv_freq.Assign(rope_inv_freq_));
    ws.inv_freq_loaded = true;
  }

  if (entry && entry->graph && entry->storage == storage) {
    G4_RETURN_IF_ERROR(entry->graph->Launch());
    ++graphs->stats_.replayed;
  } else if (entry && !fresh) {
    // A step of this size ran before: every buffer has its size and every weight is on the
    // device, so the pass allocates and uploads nothing and can be recorded (again, over
    // caches other than the last recording's).
    entry->graph.reset();
    entry->storage.clear();
    G4_RETURN_IF_ERROR(be.BeginCapture());
    const Status ran = RunOps(be, ws, items, row_begin, N, nullptr);
    StatusOr<std::unique_ptr<OpGraph>> graph = be.EndCapture();
    G4_RETURN_IF_ERROR(ran);
    if (graph.ok()) {
      entry->graph = std::move(*graph);
      entry->storage = std::move(storage);
      graphs->stats_.ops_per_step = entry->graph->num_ops();
      ++graphs->stats_.recorded;
      G4_RETURN_IF_ERROR(entry->graph->Launch());
    } else {  // nothing ran: run it op by op, and never try again
      graphs->refused_ = graph.status().message();
      ++graphs->stats_.op_by_op;
      G4_RETURN_IF_ERROR(RunOps(be, ws, items, row_begin, N, nullptr));
    }
  } else {
    if (graphs && decode) ++graphs->stats_.op_by_op;
    G4_RETURN_IF_ERROR(RunOps(be, ws, items, row_begin, N, trace));
  }

  // The one copy out; on a device it also reports any failure of the step's kernels.
  std::vector<float> host_logits(static_cast<size_t>(N * V));
  G4_RETURN_IF_ERROR(mem.Download(host_logits.data(), ws.logits.data(),
                                  host_logits.size() * sizeof(float)));
  std::vector<std::vector<float>> out(B);
  int64_t next = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t n = items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
    out[b].assign(host_logits.begin() + next * V, host_logits.begin() + (next + n) * V);
    next += n;
  }
  return out;
}

Status Gemma4Model::RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                           const std::vector<int64_t>& row_begin, int64_t N,
                           ForwardTrace* trace) const {
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t H = c.hidden_size, L = c.num_layers, P = c.ple_width, V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const size_t B = items.size();
  const int64_t R = row_begin[B];
  Memory& mem = be.memory();
  auto rows = [](int64_t n) { return static_cast<size_t>(n); };
  const int32_t* d_ids = ws.ids.data();
  const int32_t* d_pos = ws.pos.data();
  const KvWriter kv_write = [&be](const KvWriteArgs& a) { be.KvWrite(a); };

  // §2.1 scaled embedding. x0 = h: [R, H]
  Buffer<float>& h = ws.h;
  G4_RETURN_IF_ERROR(h.Allocate(rows(R * H)));
  be.Embed(w.embed, d_ids, R, static_cast<float>(std::sqrt(static_cast<double>(H))), h.data());

  // §2.2 per-layer inputs. ple: [R, L, P]
  Buffer<float>& ple = ws.ple;
  if (P > 0) {
    Buffer<float>& table = ws.ple_table;
    G4_RETURN_IF_ERROR(table.Allocate(rows(R * L * P)));
    G4_RETURN_IF_ERROR(ple.Allocate(table.size()));
    be.Embed(w.ple_embed, d_ids, R, static_cast<float>(std::sqrt(static_cast<double>(P))),
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
    trace->ple.resize(P > 0 ? ple.size() : 0);
    if (P > 0) G4_RETURN_IF_ERROR(mem.Download(trace->ple.data(), ple.data(), ple.bytes()));
    trace->hidden.clear();
    G4_RETURN_IF_ERROR(record_hidden());
  }

  // views[layer][b]: what item b attends over at a layer that owns K/V (§2.5: shared layers
  // read their donor's entry).
  std::vector<std::vector<KvView>> views(static_cast<size_t>(L));
  while (ws.k.size() < static_cast<size_t>(L)) ws.k.emplace_back(mem), ws.v.emplace_back(mem);
  Buffer<float> &a = ws.a, &o = ws.o, &q = ws.q, &attn = ws.attn, &gate = ws.gate, &up = ws.up,
                &g = ws.g;
  G4_RETURN_IF_ERROR(a.Allocate(rows(R * H)));
  G4_RETURN_IF_ERROR(o.Allocate(rows(R * H)));
  // Each sub-block ends in one ResidualNorm: o = its output projection of `in`, then
  // h = (h + post_norm(o)) * scale, and a = the next sub-block's pre-norm of h (the next layer's
  // input_norm after a layer's last sub-block).
  auto residual = [&](const TensorView& proj, const float* in, const TensorView& post_norm,
                      float scale, const TensorView* next_norm) {
    ResidualNormArgs args;
    args.proj = &proj;
    args.proj_in = in;
    args.x = o.data();
    args.w = &post_norm;
    args.h = h.data();
    args.scale = scale;
    args.next_w = next_norm;
    args.out = next_norm != nullptr ? a.data() : nullptr;
    args.R = R, args.D = H, args.eps = eps;
    be.ResidualNorm(args);
  };
  be.RmsNorm(h.data(), w.layers.front().input_norm, R, H, eps, a.data());
  for (const LayerConfig& l : c.layers) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l.index)];
    const int64_t hd = l.head_dim, nq = l.n_heads, nkv = l.n_kv_heads, I = l.mlp_width;
    const float* inv_freq = ws.inv_freq.data() + rope_at_[static_cast<size_t>(l.index)];
    const bool last = static_cast<size_t>(l.index) + 1 == w.layers.size();
    const TensorView* next_input_norm =
        last ? nullptr : &w.layers[static_cast<size_t>(l.index) + 1].input_norm;
    const float layer_scale = lw.layer_scalar.at(0);  // scales the whole residual stream

    // §2.3 attention block: h += post_attn_norm(o_proj(attend(input_norm(h)))); a holds
    // input_norm(h) (the previous layer's last ResidualNorm, or the RmsNorm above).
    G4_RETURN_IF_ERROR(q.Allocate(rows(R * nq * hd)));              // q: [R, nq, hd]
    MatMulGroup qkv;  // the q (and k, v) projections of a: one op
    qkv.w[qkv.count] = &lw.q_proj;
    qkv.y[qkv.count++] = q.data();
    Buffer<float>* k_buf = nullptr;
    Buffer<float>* v_buf = nullptr;
    if (!l.kv_shared()) {  // §2.4: this layer owns its K/V
      k_buf = &ws.k[static_cast<size_t>(l.index)];
      v_buf = &ws.v[static_cast<size_t>(l.index)];
      G4_RETURN_IF_ERROR(k_buf->Allocate(rows(R * nkv * hd)));      // k, v: [R, nkv, hd]
      G4_RETURN_IF_ERROR(v_buf->Allocate(k_buf->size()));
      qkv.w[qkv.count] = &lw.k_proj;
      qkv.y[qkv.count++] = k_buf->data();
      if (l.has_v_proj) {
        qkv.w[qkv.count] = &lw.v_proj;
        qkv.y[qkv.count++] = v_buf->data();
      }
    }
    be.GroupedMatMul(qkv, a.data(), R);
    NormRopeArgs qkv_norm;  // q_norm and RoPE of q (and k, and v's norm): one op
    qkv_norm.positions = d_pos;
    qkv_norm.T = R, qkv_norm.D = hd, qkv_norm.eps = eps, qkv_norm.inv_freq = inv_freq;
    qkv_norm.Add(q.data(), &lw.q_norm, nq, /*rope=*/true);
    // Decode items' cache writes (one row each) are taken before the norms, so that the norm op
    // stores their k and v itself (NormRopeArgs::kv); a store issues nothing but the write for
    // one row (kv_store.h). Other items write after the norms.
    std::vector<KvWriteArgs> taken;
    const KvWriter take = [&taken](const KvWriteArgs& w) { taken.push_back(w); };
    auto decode_item = [&](size_t b) {
      return items[b].cache != nullptr && row_begin[b + 1] - row_begin[b] == 1;
    };
    if (!l.kv_shared()) {
      if (!l.has_v_proj) {  // attention_k_eq_v: V is the raw K projection, before k_norm and RoPE
        G4_RETURN_IF_ERROR(mem.Copy(v_buf->data(), k_buf->data(), k_buf->bytes()));
      }
      qkv_norm.Add(k_buf->data(), &lw.k_norm, nkv, /*rope=*/true)
          .Add(v_buf->data(), nullptr, nkv, /*rope=*/false);  // v: no weight, no rotation
      std::vector<KvView>& own = views[static_cast<size_t>(l.index)];
      own.resize(B);
      for (size_t b = 0; b < B; ++b) {
        if (!decode_item(b)) continue;
        const int64_t r0 = row_begin[b];
        G4_ASSIGN_OR_RETURN(own[b], items[b].cache->Write(take, l.index,
                                                          k_buf->data() + r0 * nkv * hd,
                                                          v_buf->data() + r0 * nkv * hd,
                                                          d_pos + r0, 1));
      }
      if (taken.size() <= static_cast<size_t>(kMaxNormRopeKvWrites)) {
        qkv_norm.kv = taken.data();
        qkv_norm.kv_count = static_cast<int>(taken.size());
      }
    }
    be.NormRope(qkv_norm);
    if (qkv_norm.kv_count == 0) {
      for (const KvWriteArgs& w : taken) be.KvWrite(w);
    }
    if (!l.kv_shared()) {
      Buffer<float>& k = *k_buf;
      Buffer<float>& v = *v_buf;
      std::vector<KvView>& own = views[static_cast<size_t>(l.index)];
      for (size_t b = 0; b < B; ++b) {
        if (decode_item(b)) continue;
        const int64_t r0 = row_begin[b], T = row_begin[b + 1] - r0;
        const float* kb = k.data() + r0 * nkv * hd;
        const float* vb = v.data() + r0 * nkv * hd;
        if (items[b].cache) {
          G4_ASSIGN_OR_RETURN(own[b], items[b].cache->Write(kv_write, l.index, kb, vb,
                                                            d_pos + r0, T));
        } else {
          own[b] = KvView{kb, vb, d_pos + r0, T};
        }
      }
    }
    const std::vector<KvView>& lv = views[static_cast<size_t>(l.kv_source)];
    G4_RETURN_IF_ERROR(attn.Allocate(q.size()));                    // attn: [R, nq, hd]
    AttentionBatchArgs batch;  // the items' attention, up to kMaxAttentionBatch per op
    for (size_t b = 0; b < B; ++b) {
      const int64_t r0 = row_begin[b];
      AttentionArgs& args = batch.items[batch.count++];
      args.q = q.data() + r0 * nq * hd;
      args.k = lv[b].k;
      args.v = lv[b].v;
      args.q_pos = d_pos + r0;
      args.k_pos = lv[b].pos;
      args.T = row_begin[b + 1] - r0;
      args.S = lv[b].S;
      args.n_heads = nq;
      args.n_kv_heads = nkv;
      args.head_dim = hd;
      args.window = l.sliding() ? c.sliding_window : 0;
      args.scale = 1.0f;  // Gemma 4: no 1/sqrt(d); q_norm/k_norm set the scale
      args.out = attn.data() + r0 * nq * hd;
      if (batch.count == kMaxAttentionBatch || b + 1 == B) {
        be.AttentionBatch(batch);
        batch.count = 0;
      }
    }
    residual(lw.o_proj, attn.data(), lw.post_attn_norm, 1.0f, &lw.pre_ff_norm);

    // MLP block: h += post_ff_norm(down(gelu(gate(x)) * up(x))), x = pre_ff_norm(h) = a
    G4_RETURN_IF_ERROR(gate.Allocate(rows(R * I)));                 // gate, up: [R, I]
    G4_RETURN_IF_ERROR(up.Allocate(gate.size()));
    MatMulGroup gate_up;
    gate_up.w[0] = &lw.gate_proj;
    gate_up.y[0] = gate.data();
    gate_up.w[1] = &lw.up_proj;
    gate_up.y[1] = up.data();
    gate_up.count = 2;
    gate_up.gelu_gate = true;  // gate = gelu(gate) * up; up is scratch
    be.GroupedMatMul(gate_up, a.data(), R);
    if (P > 0) {
      residual(lw.down_proj, gate.data(), lw.post_ff_norm, 1.0f, nullptr);
    } else {
      residual(lw.down_proj, gate.data(), lw.post_ff_norm, layer_scale, next_input_norm);
    }

    // PLE injection: h += post_ple_norm(ple_proj(gelu(ple_gate(h)) * ple[:, i, :]))
    if (P > 0) {
      G4_RETURN_IF_ERROR(g.Allocate(rows(R * P)));                  // g: [R, P]
      MatMulGroup ple_gate;  // g = gelu(ple_gate(h)) * ple[:, l]: one op
      ple_gate.w[0] = &lw.ple_gate;
      ple_gate.y[0] = g.data();
      ple_gate.count = 1;
      ple_gate.gelu_up = ple.data() + l.index * P;
      ple_gate.gelu_up_stride = L * P;
      be.GroupedMatMul(ple_gate, h.data(), R);
      residual(lw.ple_proj, g.data(), lw.ple_norm, layer_scale, next_input_norm);
    }
    if (trace) G4_RETURN_IF_ERROR(record_hidden());
  }

  // §2.9 final norm, tied head (unscaled embedding), softcap — for the rows that need logits,
  // gathered so the head's weights are read once for the whole batch (each item's rows are
  // consecutive: one copy per item).
  Buffer<float>& y = ws.y;                                          // y: [N, H]
  G4_RETURN_IF_ERROR(y.Allocate(rows(N * H)));
  for (size_t b = 0, next = 0; b < B; ++b) {
    const int64_t first = items[b].last_logits_only ? row_begin[b + 1] - 1 : row_begin[b];
    const int64_t n = row_begin[b + 1] - first;
    G4_RETURN_IF_ERROR(mem.Copy(y.data() + next * H, h.data() + first * H,
                                rows(n * H) * sizeof(float)));
    next += static_cast<size_t>(n);
  }
  be.RmsNorm(y.data(), w.final_norm, N, H, eps, y.data());
  G4_RETURN_IF_ERROR(ws.logits.Allocate(rows(N * V)));             // logits: [N, V]
  be.MatMul(w.lm_head, y.data(), N, ws.logits.data());
  if (c.final_logit_softcap > 0) {
    be.Softcap(ws.logits.data(), N * V, static_cast<float>(c.final_logit_softcap));
  }
  return Status();
}

}  // namespace g4
