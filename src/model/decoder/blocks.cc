#include "model/decoder/blocks.h"

namespace g4 {
namespace {

size_t Rows(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

DecoderPass::DecoderPass(Backend& be, ForwardWorkspace& ws, const ModelConfig& config,
                         std::span<const CausalLM::BatchItem> items,
                         const std::vector<int64_t>& row_begin, int64_t N)
    : be_(be), ws_(ws), c_(config), items_(items), row_begin_(row_begin),
      R_(row_begin[items.size()]), N_(N), eps_(static_cast<float>(config.rms_norm_eps)),
      views_(static_cast<size_t>(config.num_layers)) {
  Memory& mem = be.memory();
  while (ws_.k.size() < Rows(config.num_layers)) ws_.k.emplace_back(mem), ws_.v.emplace_back(mem);
}

Status DecoderPass::Embed(const TensorView& table, float scale) {
  G4_RETURN_IF_ERROR(ws_.h.Allocate(Rows(R_ * c_.hidden_size)));  // h: [R, H]
  be_.Embed(table, ws_.ids.data(), R_, scale, ws_.h.data());
  return Status::Ok();
}

Status DecoderPass::PreNorm(const TensorView& w) {
  G4_RETURN_IF_ERROR(ws_.a.Allocate(Rows(R_ * c_.hidden_size)));  // a, o: [R, H]
  G4_RETURN_IF_ERROR(ws_.o.Allocate(Rows(R_ * c_.hidden_size)));
  be_.RmsNorm(ws_.h.data(), w, R_, c_.hidden_size, eps_, ws_.a.data());
  return Status::Ok();
}

void DecoderPass::Residual(const TensorView& proj, const float* in, const TensorView& post_norm,
                           float scale, const TensorView* next_norm) {
  ResidualOf(&proj, in, post_norm, scale, next_norm);
}

void DecoderPass::ResidualOf(const TensorView* proj, const float* in, const TensorView& post_norm,
                             float scale, const TensorView* next_norm) {
  ResidualNormArgs args;
  args.proj = proj;
  args.proj_in = in;
  args.x = ws_.o.data();
  args.w = &post_norm;
  args.h = ws_.h.data();
  args.scale = scale;
  args.next_w = next_norm;
  args.out = next_norm != nullptr ? ws_.a.data() : nullptr;
  args.R = R_, args.D = c_.hidden_size, args.eps = eps_;
  be_.ResidualNorm(args);
}

Status DecoderPass::Attention(const LayerConfig& l, const LayerWeights& lw,
                              const float* inv_freq) {
  const size_t B = items_.size();
  const int64_t hd = l.head_dim, nq = l.n_heads, nkv = l.n_kv_heads;
  const int32_t* d_pos = ws_.pos.data();
  Buffer<float> &q = ws_.q, &attn = ws_.attn;
  G4_RETURN_IF_ERROR(q.Allocate(Rows(R_ * nq * hd)));  // q: [R, nq, hd]
  MatMulGroup qkv;  // the q (and k, v) projections of a: one op
  qkv.w[qkv.count] = &lw.q_proj;
  qkv.y[qkv.count++] = q.data();
  Buffer<float>* k_buf = nullptr;
  Buffer<float>* v_buf = nullptr;
  if (!l.kv_shared()) {  // this layer owns its K/V
    k_buf = &ws_.k[static_cast<size_t>(l.index)];
    v_buf = &ws_.v[static_cast<size_t>(l.index)];
    G4_RETURN_IF_ERROR(k_buf->Allocate(Rows(R_ * nkv * hd)));  // k, v: [R, nkv, hd]
    G4_RETURN_IF_ERROR(v_buf->Allocate(k_buf->size()));
    qkv.w[qkv.count] = &lw.k_proj;
    qkv.y[qkv.count++] = k_buf->data();
    if (l.has_v_proj) {
      qkv.w[qkv.count] = &lw.v_proj;
      qkv.y[qkv.count++] = v_buf->data();
    }
  }
  be_.GroupedMatMul(qkv, ws_.a.data(), R_);
  NormRopeArgs qkv_norm;  // q_norm and RoPE of q (and k, and v's norm): one op
  qkv_norm.positions = d_pos;
  qkv_norm.T = R_, qkv_norm.D = hd, qkv_norm.eps = eps_, qkv_norm.inv_freq = inv_freq;
  qkv_norm.Add(q.data(), &lw.q_norm, nq, /*rope=*/true);
  // Decode items' cache writes (one row each) are taken before the norms, so that the norm op
  // stores their k and v itself (NormRopeArgs::kv); a store issues nothing but the write for
  // one row (kv_store.h). Other items write after the norms.
  std::vector<KvWriteArgs> taken;
  const KvWriter take = [&taken](const KvWriteArgs& w) { taken.push_back(w); };
  if (!l.kv_shared()) {
    if (!l.has_v_proj) {  // attention_k_eq_v: V is the raw K projection, before k_norm and RoPE
      G4_RETURN_IF_ERROR(be_.memory().Copy(v_buf->data(), k_buf->data(), k_buf->bytes()));
    }
    qkv_norm.Add(k_buf->data(), &lw.k_norm, nkv, /*rope=*/true);
    // Gemma 4 normalises v (no weight, no rotation); the KV writes expect v as part 2, so a
    // model without the v-norm passes v with no rows to normalise (H = 0).
    qkv_norm.Add(v_buf->data(), nullptr, c_.v_norm ? nkv : 0, /*rope=*/false);
    std::vector<KvView>& own = views_[static_cast<size_t>(l.index)];
    own.resize(B);
    for (size_t b = 0; b < B; ++b) {
      if (!DecodeItem(b)) continue;
      const int64_t r0 = row_begin_[b];
      G4_ASSIGN_OR_RETURN(own[b], items_[b].cache->Write(take, l.index,
                                                         k_buf->data() + r0 * nkv * hd,
                                                         v_buf->data() + r0 * nkv * hd,
                                                         d_pos + r0, 1));
    }
    if (taken.size() <= static_cast<size_t>(kMaxNormRopeKvWrites)) {
      qkv_norm.kv = taken.data();
      qkv_norm.kv_count = static_cast<int>(taken.size());
    }
  }
  be_.NormRope(qkv_norm);
  if (qkv_norm.kv_count == 0) {
    for (const KvWriteArgs& w : taken) be_.KvWrite(w);
  }
  if (!l.kv_shared()) {
    const KvWriter kv_write = [this](const KvWriteArgs& a) { be_.KvWrite(a); };
    std::vector<KvView>& own = views_[static_cast<size_t>(l.index)];
    for (size_t b = 0; b < B; ++b) {
      if (DecodeItem(b)) continue;
      const int64_t r0 = row_begin_[b], T = row_begin_[b + 1] - r0;
      const float* kb = k_buf->data() + r0 * nkv * hd;
      const float* vb = v_buf->data() + r0 * nkv * hd;
      if (items_[b].cache) {
        G4_ASSIGN_OR_RETURN(own[b], items_[b].cache->Write(kv_write, l.index, kb, vb,
                                                           d_pos + r0, T));
      } else {
        own[b] = KvView{.k = kb, .v = vb, .pos = d_pos + r0, .S = T};
      }
    }
  }
  const std::vector<KvView>& lv = views_[static_cast<size_t>(l.kv_source)];
  G4_RETURN_IF_ERROR(attn.Allocate(q.size()));  // attn: [R, nq, hd]
  AttentionBatchArgs batch;  // the items' attention, up to kMaxAttentionBatch per op
  for (size_t b = 0; b < B; ++b) {
    const int64_t r0 = row_begin_[b];
    AttentionArgs& args = batch.items[batch.count++];
    args.q = q.data() + r0 * nq * hd;
    args.k = lv[b].k;
    args.v = lv[b].v;
    args.k16 = lv[b].k16;
    args.v16 = lv[b].v16;
    args.k8 = lv[b].k8;
    args.v8 = lv[b].v8;
    args.k_scale8 = lv[b].k_scale8;
    args.v_scale8 = lv[b].v_scale8;
    args.q_pos = d_pos + r0;
    args.k_pos = lv[b].pos;
    args.block_table = lv[b].block_table;
    args.block_size = lv[b].block_size;
    args.T = row_begin_[b + 1] - r0;
    args.S = lv[b].S;
    args.n_heads = nq;
    args.n_kv_heads = nkv;
    args.head_dim = hd;
    args.window = l.sliding() ? c_.sliding_window : 0;
    args.scale = static_cast<float>(c_.attention_scale);
    args.out = attn.data() + r0 * nq * hd;
    if (batch.count == kMaxAttentionBatch || b + 1 == B) {
      be_.AttentionBatch(batch);
      batch.count = 0;
    }
  }
  Residual(lw.o_proj, attn.data(), lw.post_attn_norm, 1.0f, &lw.pre_ff_norm);
  return Status::Ok();
}

Status DecoderPass::GeluGateUp(const LayerWeights& lw) {
  Buffer<float> &gate = ws_.gate, &up = ws_.up;
  G4_RETURN_IF_ERROR(gate.Allocate(Rows(R_ * lw.gate_proj.dim(0))));  // gate, up: [R, I]
  G4_RETURN_IF_ERROR(up.Allocate(gate.size()));
  MatMulGroup gate_up;
  gate_up.w[0] = &lw.gate_proj;
  gate_up.y[0] = gate.data();
  gate_up.w[1] = &lw.up_proj;
  gate_up.y[1] = up.data();
  gate_up.count = 2;
  gate_up.gelu_gate = true;  // gate = gelu(gate) * up; up is scratch
  be_.GroupedMatMul(gate_up, ws_.a.data(), R_);
  return Status::Ok();
}

Status DecoderPass::Mlp(const LayerWeights& lw, float scale, const TensorView* next_norm) {
  G4_RETURN_IF_ERROR(GeluGateUp(lw));
  Residual(lw.down_proj, ws_.gate.data(), lw.post_ff_norm, scale, next_norm);
  return Status::Ok();
}

Status DecoderPass::MoeMlp(const LayerWeights& lw, float scale, const TensorView* next_norm) {
  const int64_t H = c_.hidden_size, E = lw.router_proj.dim(0);
  Buffer<float> &o = ws_.o, &a = ws_.a;
  G4_RETURN_IF_ERROR(GeluGateUp(lw));  // the dense branch, as in Mlp
  be_.MatMul(lw.down_proj, ws_.gate.data(), R_, o.data());  // o: [R, H]
  be_.RmsNorm(o.data(), lw.post_ff_norm_1, R_, H, eps_, o.data());
  // The router reads the residual r = h: a is free once the dense branch has read it.
  Buffer<float> &logits = ws_.moe_logits, &experts = ws_.moe_out;
  G4_RETURN_IF_ERROR(logits.Allocate(Rows(R_ * E)));  // logits: [R, E]
  G4_RETURN_IF_ERROR(experts.Allocate(Rows(R_ * H)));  // experts: [R, H]
  be_.RmsNorm(ws_.h.data(), lw.router_scale, R_, H, eps_, a.data());
  be_.MatMul(lw.router_proj, a.data(), R_, logits.data());
  be_.RmsNorm(ws_.h.data(), lw.pre_ff_norm_2, R_, H, eps_, a.data());
  MoeArgs moe;
  moe.logits = logits.data();
  moe.x = a.data();
  moe.gate_up = &lw.experts_gate_up;
  moe.up = lw.experts_up.empty() ? nullptr : &lw.experts_up;
  moe.down = &lw.experts_down;
  moe.per_expert_scale = &lw.per_expert_scale;
  moe.R = R_;
  moe.top_k = c_.top_k_experts;
  moe.out = experts.data();
  G4_RETURN_IF_ERROR(be_.Moe(moe));
  be_.RmsNorm(experts.data(), lw.post_ff_norm_2, R_, H, eps_, experts.data());
  be_.Add(o.data(), experts.data(), R_ * H, o.data());
  ResidualOf(nullptr, nullptr, lw.post_ff_norm, scale, next_norm);  // x = o
  return Status::Ok();
}

Status DecoderPass::Head(const TensorView& final_norm, const TensorView& lm_head, float softcap) {
  const int64_t H = c_.hidden_size, V = c_.vocab_size;
  Memory& mem = be_.memory();
  Buffer<float>& y = ws_.y;  // y: [N, H]
  G4_RETURN_IF_ERROR(y.Allocate(Rows(N_ * H)));
  // Each item's rows are consecutive: one copy per item.
  for (size_t b = 0, next = 0; b < items_.size(); ++b) {
    const int64_t first = items_[b].last_logits_only ? row_begin_[b + 1] - 1 : row_begin_[b];
    const int64_t n = row_begin_[b + 1] - first;
    G4_RETURN_IF_ERROR(mem.Copy(y.data() + next * H, ws_.h.data() + first * H,
                                Rows(n * H) * sizeof(float)));
    next += static_cast<size_t>(n);
  }
  be_.RmsNorm(y.data(), final_norm, N_, H, eps_, y.data());
  G4_RETURN_IF_ERROR(ws_.logits.Allocate(Rows(N_ * V)));  // logits: [N, V]
  be_.MatMul(lm_head, y.data(), N_, ws_.logits.data());
  if (softcap > 0) be_.Softcap(ws_.logits.data(), N_ * V, softcap);
  return Status::Ok();
}

Status DecoderPass::RecordHidden(ForwardTrace* trace) {
  const size_t at = trace->hidden.size();
  trace->hidden.resize(at + ws_.h.size());
  return be_.memory().Download(trace->hidden.data() + at, ws_.h.data(), ws_.h.bytes());
}

}  // namespace g4
