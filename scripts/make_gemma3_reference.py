#!/usr/bin/env python3
"""transformers (Hugging Face) oracle for g4's Gemma 3 text path: tiny fixtures.

Builds tiny random Gemma 3 text models from transformers' own config classes, writes them with
`save_pretrained` (so the files are exactly what transformers writes), runs transformers' forward in
float32 (eager attention, CPU, one thread) and records the logits, in the same layout as
tests/data/hf/<case>/ (scripts/make_reference.py, Gemma 4):

    config.json, generation_config.json, model.safetensors   (written by save_pretrained)
    input_ids.json      the prompt, a JSON list of ints, first id <bos> = 2
    logits.f32          raw little-endian float32 [T, vocab]: logits at every prompt position
    greedy_logits.f32   raw little-endian float32 [16, vocab]: row k is the distribution whose
                        argmax is greedy id k (row 0 = last row of logits.f32), computed through
                        transformers' own KV cache (DynamicCache)
    meta.json           argmax, margins, tolerance, versions, seeds, cross-check numbers

Cases (see tests/data/hf-gemma3/README.md):
    hf-gemma3-270m-like   Gemma3ForCausalLM (model_type gemma3_text, tensors under model.)
    hf-gemma3-4b-like     Gemma3ForConditionalGeneration (model_type gemma3, text_config +
                          a tiny SigLIP vision_config). NB: save_pretrained writes the text tensors
                          as language_model.model.* (the released checkpoints' names), not
                          model.language_model.* (transformers' in-memory names)

Every fixture is cross-checked against an independent float64 NumPy implementation of the Gemma 3
text forward written in this file (`Gemma3Ref`: reads config.json + model.safetensors itself), and
against transformers itself run in float64 with its fp32 islands patched out. The numbers go into
meta.json under cross_check, together with a sensitivity table: how far the logits move under the
plausible engine bugs (1/sqrt(head_dim) instead of 1/sqrt(query_pre_attn_scalar), RMSNorm without
the +1, no linear RoPE scaling, window off by one, one theta for all layers, ...), in units of the
fp32 tolerance, so that it is on record which mistakes each fixture catches.

    /path/venv/bin/python scripts/make_gemma3_reference.py --out tests/data/hf-gemma3
    /path/venv/bin/python scripts/make_gemma3_reference.py --out tests/data/hf-gemma3 --case hf-gemma3-270m-like

Nothing here touches the network (HF_HUB_OFFLINE=1; every model is built from a local config).
Versions: scripts/requirements-oracle.txt (torch 2.13.0 CPU, transformers 5.24.0, numpy 2.4.6).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import oracle_common as oc  # scripts/oracle_common.py (scripts/ is sys.path[0])

oc.set_offline_env()  # before transformers / huggingface_hub are imported

import torch  # noqa: E402
from safetensors.numpy import load_file as st_load_file  # noqa: E402
from transformers import SiglipVisionConfig  # noqa: E402
from transformers.models.gemma3 import (  # noqa: E402
    Gemma3Config,
    Gemma3ForCausalLM,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
)

oc.quiet_transformers()

SLIDING, FULL = oc.SLIDING, oc.FULL

# Initialisation: make_reference.py's scheme (HF's default init, std 0.02 and norms w = 0, gives a
# nearly linear network with tiny top-1/top-2 margins), adapted to Gemma 3's x * (1 + w) norms.
ATTN_SCORE_STD = 1.5   # q_norm/k_norm gains chosen so that raw scores q.k/sqrt(qpas) have std ~1.5
# Gains of the other norms (effective gain 1 + w = gain * (1 + 0.1 N(0,1))) and the embedding RMS.
# With tied embeddings the input token's own embedding rides the residual stream to the head and
# votes for itself (logit ~ 8 * share * typical logit, share = |x0| / |x_final|): with block outputs
# as small as x0 every greedy continuation collapses into repeating one id. Large post-norm gains
# (the released Gemma 3 checkpoints have large post-norm weights too) dilute x0, and the final norm
# gain brings the logits back to a few units.
INIT = dict(
    embed_rms=1.0,     # embed_tokens ~ N(0, (embed_rms/sqrt(H))^2): x0 = E*sqrt(H) has RMS embed_rms
    pre_gain=1.15,     # input_layernorm, pre_feedforward_layernorm
    post_gain=4.0,     # post_attention_layernorm, post_feedforward_layernorm
    final_gain=2.0,    # norm (final)
)
MIN_DISTINCT_GREEDY = 6   # the 16 greedy ids must hold at least this many distinct ids


def _layer_types(n):
    """Gemma 3: layer i is sliding iff i % 6 < 5 (5, 11, 17, ... are full)."""
    return [SLIDING if i % 6 < 5 else FULL for i in range(n)]


COMMON_TEXT = dict(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=7,
    layer_types=_layer_types(7),          # S S S S S F S: a full layer in the middle, a sliding one after
    num_attention_heads=4,
    head_dim=32,                          # != hidden / heads = 16
    hidden_activation="gelu_pytorch_tanh",
    rms_norm_eps=1e-6,
    final_logit_softcapping=None,
    attn_logit_softcapping=None,
    tie_word_embeddings=True,
    attention_bias=False,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=oc.BOS,
    use_bidirectional_attention=False,
)

CASES = {
    "hf-gemma3-270m-like": dict(
        layout="causal-lm",
        weight_seed=3270,
        prompt_seed=32700,
        n_tokens=28,
        description=(
            "Gemma 3 270M layout at toy size, saved by transformers as Gemma3ForCausalLM (model_type "
            "gemma3_text, tensors under model., flat config). 7 layers SSSSSFS (sliding iff i % 6 < 5: "
            "layer 5 is full, layer 6 is sliding again), MQA 4 q heads / 1 KV head, head_dim 32 != "
            "hidden/heads 16, query_pre_attn_scalar 48 (scores x 1/sqrt(48), not 1/sqrt(32)), sliding "
            "window 8 crossed by a 28-token prompt (3.5 windows), RoPE theta 1e6 on the full layer and "
            "10000 on sliding layers (rope_parameters per layer type, rope_type default), tied "
            "embeddings, RMSNorm weights w clearly nonzero (applied as x * (1 + w)), no softcaps, "
            "vocab 512, MLP 64 -> 96."
        ),
        text=dict(
            vocab_size=512,
            num_key_value_heads=1,
            query_pre_attn_scalar=48,
            sliding_window=8,
            max_position_embeddings=32768,
            rope_parameters={
                SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
                FULL: {"rope_type": "default", "rope_theta": 1000000.0},
            },
        ),
    ),
    "hf-gemma3-4b-like": dict(
        layout="multimodal",
        weight_seed=3004,
        prompt_seed=30040,
        n_tokens=1040,
        description=(
            "Gemma 3 4B/12B/27B layout at toy size, saved by transformers as "
            "Gemma3ForConditionalGeneration (model_type gemma3: text_config + a tiny SigLIP "
            "vision_config). In the FILE the text tensors are named language_model.model.* beside "
            "vision_tower.* and multi_modal_projector.* (which a text engine must skip): transformers "
            "5.24 builds them as model.language_model.* in memory but save_pretrained maps the names back "
            "to the released Gemma 3 checkpoints' convention. "
            "7 layers SSSSSFS, GQA 4 q heads / 2 KV heads (q head j uses KV head j // 2), head_dim 32, "
            "query_pre_attn_scalar 16 = hidden/heads (the 27B convention; != head_dim), linear RoPE "
            "scaling factor 8 on the full layer only (rope_parameters.full_attention = {rope_type "
            "linear, factor 8, theta 1e6}; sliding layers theta 10000, unscaled), sliding window 1024 "
            "crossed by a 1040-token prompt (positions 1024..1039 lose their oldest keys), vocab 256, "
            "no softcaps, tied embeddings."
        ),
        text=dict(
            vocab_size=256,
            num_key_value_heads=2,
            query_pre_attn_scalar=16,
            sliding_window=1024,
            max_position_embeddings=131072,
            rope_parameters={
                SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
                FULL: {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            },
        ),
        vision=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                    image_size=28, patch_size=14, vision_use_head=False),
        mm_tokens_per_image=4,
    ),
}


# ---------------------------------------------------------------------------------------------
# seeded initialisation
# ---------------------------------------------------------------------------------------------

def qk_gain(head_dim, qpas):
    """Mean effective q/k norm gain g so that (g q).(g k) / sqrt(qpas) has std ~ATTN_SCORE_STD
    for unit-RMS q, k: g^2 sqrt(head_dim) / sqrt(qpas) = ATTN_SCORE_STD."""
    return math.sqrt(ATTN_SCORE_STD * math.sqrt(qpas) / math.sqrt(head_dim))


def init_rule(short, shape, tc, init):
    """(kind, arg) for a tensor named `short` (prefix model. / model.language_model. removed)."""
    if short == "embed_tokens.weight":
        return ("normal", init["embed_rms"] / math.sqrt(tc.hidden_size))
    if short.endswith("self_attn.q_norm.weight") or short.endswith("self_attn.k_norm.weight"):
        return ("gemma_norm", qk_gain(tc.head_dim, tc.query_pre_attn_scalar))
    if short.endswith("post_attention_layernorm.weight") or short.endswith("post_feedforward_layernorm.weight"):
        return ("gemma_norm", init["post_gain"])
    if short.endswith("input_layernorm.weight") or short.endswith("pre_feedforward_layernorm.weight"):
        return ("gemma_norm", init["pre_gain"])
    if short == "norm.weight":
        return ("gemma_norm", init["final_gain"])
    if short.endswith(".weight") and len(shape) == 2:
        return ("normal", 1.0 / math.sqrt(shape[1]))          # N(0, 1/fan_in)
    raise ValueError(f"no init rule for tensor {short} {tuple(shape)}")


def vision_rule(short, shape):
    """The vision tower and projector are never run by the tests; they only have to exist (and be
    non-trivial) so that the files have the released multimodal layout."""
    if short.endswith("bias"):
        return ("normal", 0.02)
    if len(shape) >= 2:
        return ("normal", 1.0 / math.sqrt(int(np.prod(shape[1:]))))
    if short.endswith("mm_soft_emb_norm.weight"):
        return ("gemma_norm", 1.0)
    return ("norm", None)                          # LayerNorm weight 1 + 0.1 N(0,1)


# Text tensor prefixes: in memory, transformers 5 names the multimodal text tensors
# model.language_model.*; save_pretrained maps them back to the released checkpoints' names,
# language_model.model.* (and vision_tower.*, multi_modal_projector.*). Gemma3ForCausalLM: model.*
TEXT_PREFIXES = ("model.language_model.", "language_model.model.", "model.")


def is_vision(name):
    return any(name.startswith(p) for p in ("model.vision_tower.", "model.multi_modal_projector.",
                                            "vision_tower.", "multi_modal_projector."))


def text_prefix_of(names):
    """The prefix of the text tensors in a saved file (the one embed_tokens.weight carries)."""
    for p in TEXT_PREFIXES:
        if p + "embed_tokens.weight" in names:
            return p
    raise KeyError("no embed_tokens.weight under any known prefix")


def seeded_init(model, tc, seed, init):
    """Overwrite every persistent tensor in place; each from default_rng([seed, crc32(name)])."""
    def rule_of(name, shape):
        if is_vision(name):
            return name, vision_rule(name, shape)          # vision tensors: full name as the key
        short = oc.strip_prefix(name, TEXT_PREFIXES)
        return short, init_rule(short, shape, tc, init)

    return oc.seeded_init(model, seed, rule_of)


# ---------------------------------------------------------------------------------------------
# model construction and running (transformers)
# ---------------------------------------------------------------------------------------------

def build_config(spec):
    kw = dict(COMMON_TEXT)
    kw.update(spec["text"])
    kw["layer_types"] = list(kw["layer_types"])
    kw["rope_parameters"] = json.loads(json.dumps(kw["rope_parameters"]))
    tc = Gemma3TextConfig(**kw)
    if spec["layout"] == "causal-lm":
        return tc, Gemma3ForCausalLM
    vc = SiglipVisionConfig(**spec["vision"])
    cfg = Gemma3Config(text_config=tc.to_dict(), vision_config=vc.to_dict(),
                       mm_tokens_per_image=spec["mm_tokens_per_image"])
    return cfg, Gemma3ForConditionalGeneration


def load(ckpt_dir, dtype=torch.float32):
    """Load a checkpoint folder in transformers, picking the class from config.json."""
    return oc.load_checkpoint(ckpt_dir, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, dtype)


# ---------------------------------------------------------------------------------------------
# the independent NumPy float64 reference
# ---------------------------------------------------------------------------------------------

class Gemma3Ref:
    """Gemma 3 text forward in float64 NumPy, from config.json + model.safetensors as written.

    Written from shared/spec/gemma3.md (not from transformers' code):
      x0 = E[ids] * sqrt(H)
      per layer i (sliding iff layer_types[i] == sliding_attention):
        h = rms(x) * (1 + w_in)                          rms(x) = x / sqrt(mean(x^2) + eps)
        q, k, v = h Wq^T, h Wk^T, h Wv^T                 [T, nq, hd], [T, nkv, hd]
        q = rms(q) * (1 + w_qnorm); k = rms(k) * (1 + w_knorm)   (per head, over hd)
        q, k = NeoX RoPE (rotate halves [0, hd/2) and [hd/2, hd)), angle = pos * theta^(-2j/hd) / factor
        s = q.k / sqrt(query_pre_attn_scalar); key k visible to query q iff k <= q and (full or q - k < W)
        a = softmax(s) v; q head j reads KV head j // (nq / nkv)
        x = x + rms(a Wo^T) * (1 + w_post_attn)
        x = x + rms(down(gelu_tanh(gate(h2)) * up(h2))) * (1 + w_post_ffw),  h2 = rms(x) * (1 + w_pre_ffw)
      logits = (rms(x) * (1 + w_final)) E^T              (tied head, no softcap)

    The keyword knobs reproduce plausible engine mistakes, for the sensitivity table only.
    """

    def __init__(self, ckpt_dir, scale="qpas", norm_plus_one=True, rope_linear=True, window_off_by_one=False,
                 no_window=False, one_theta=None, neox=True, embed_scale="exact", qk_norm=True):
        _, tc = oc.read_config(ckpt_dir)
        self.tc = tc
        sd = st_load_file(os.path.join(ckpt_dir, "model.safetensors"))
        prefix = text_prefix_of(set(sd))
        self.w = {k[len(prefix):]: v.astype(np.float64) for k, v in sd.items() if k.startswith(prefix)}
        self.H = tc["hidden_size"]
        self.L = tc["num_hidden_layers"]
        self.nq = tc["num_attention_heads"]
        self.nkv = tc["num_key_value_heads"]
        self.hd = tc["head_dim"]
        self.eps = tc["rms_norm_eps"]
        self.W = tc["sliding_window"]
        self.types = tc["layer_types"]
        self.rope = tc["rope_parameters"]
        assert tc.get("final_logit_softcapping") is None and tc.get("attn_logit_softcapping") is None
        assert tc["hidden_activation"] == "gelu_pytorch_tanh"
        self.scale = {"qpas": tc["query_pre_attn_scalar"] ** -0.5, "head_dim": self.hd ** -0.5,
                      "hidden_over_heads": (self.H // self.nq) ** -0.5}[scale]
        self.plus = 1.0 if norm_plus_one else 0.0
        self.rope_linear = rope_linear
        self.window_off_by_one = window_off_by_one
        self.no_window = no_window
        self.one_theta = one_theta
        self.neox = neox
        self.embed = math.sqrt(self.H) if embed_scale == "exact" else float(np.float32(math.sqrt(self.H)))
        self.qk_norm = qk_norm

    def rms(self, x, name):
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return y * (self.plus + self.w[name])

    def rope_tables(self, layer_type, T):
        p = self.rope[layer_type]
        theta = float(p["rope_theta"]) if self.one_theta is None else float(self.one_theta)
        j = np.arange(self.hd // 2, dtype=np.float64)
        inv = theta ** (-2.0 * j / self.hd)
        kind = p.get("rope_type", "default")
        if kind == "linear":
            if self.rope_linear:
                inv = inv / float(p["factor"])
        elif kind != "default":
            raise NotImplementedError(p)
        ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]          # [T, hd/2]
        return np.cos(ang), np.sin(ang)

    def apply_rope(self, x, cos, sin):
        # x [T, n, hd]
        h = self.hd // 2
        c, s = cos[:, None, :], sin[:, None, :]
        if self.neox:
            x1, x2 = x[..., :h], x[..., h:]
            return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
        x1, x2 = x[..., 0::2], x[..., 1::2]                                     # GPT-J interleaved (bug)
        out = np.empty_like(x)
        out[..., 0::2] = x1 * c - x2 * s
        out[..., 1::2] = x2 * c + x1 * s
        return out

    def mask(self, layer_type, T):
        q = np.arange(T)[:, None]
        k = np.arange(T)[None, :]
        ok = k <= q
        if layer_type == SLIDING and not self.no_window:
            ok &= (q - k <= self.W) if self.window_off_by_one else (q - k < self.W)
        return ok

    def forward(self, ids):
        ids = np.asarray(ids)
        T = len(ids)
        E = self.w["embed_tokens.weight"]
        x = E[ids] * self.embed
        tables = {t: self.rope_tables(t, T) for t in set(self.types)}
        masks = {t: self.mask(t, T) for t in set(self.types)}
        g = self.nq // self.nkv
        for i in range(self.L):
            p = f"layers.{i}."
            lt = self.types[i]
            h = self.rms(x, p + "input_layernorm.weight")
            q = (h @ self.w[p + "self_attn.q_proj.weight"].T).reshape(T, self.nq, self.hd)
            k = (h @ self.w[p + "self_attn.k_proj.weight"].T).reshape(T, self.nkv, self.hd)
            v = (h @ self.w[p + "self_attn.v_proj.weight"].T).reshape(T, self.nkv, self.hd)
            if self.qk_norm:
                q = self.rms(q, p + "self_attn.q_norm.weight")
                k = self.rms(k, p + "self_attn.k_norm.weight")
            cos, sin = tables[lt]
            q = self.apply_rope(q, cos, sin)
            k = self.apply_rope(k, cos, sin)
            out = np.empty((T, self.nq, self.hd))
            for j in range(self.nq):
                s = (q[:, j, :] @ k[:, j // g, :].T) * self.scale
                s = np.where(masks[lt], s, -np.inf)
                s = s - s.max(axis=-1, keepdims=True)
                e = np.exp(s)
                out[:, j, :] = (e / e.sum(axis=-1, keepdims=True)) @ v[:, j // g, :]
            a = out.reshape(T, self.nq * self.hd) @ self.w[p + "self_attn.o_proj.weight"].T
            x = x + self.rms(a, p + "post_attention_layernorm.weight")
            h2 = self.rms(x, p + "pre_feedforward_layernorm.weight")
            gt = h2 @ self.w[p + "mlp.gate_proj.weight"].T
            up = h2 @ self.w[p + "mlp.up_proj.weight"].T
            gelu = 0.5 * gt * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (gt + 0.044715 * gt ** 3)))
            m = (gelu * up) @ self.w[p + "mlp.down_proj.weight"].T
            x = x + self.rms(m, p + "post_feedforward_layernorm.weight")
        return self.rms(x, "norm.weight") @ E.T

    def greedy(self, ids, n_new):
        """Greedy ids and the [n_new, vocab] step logits, by full recomputation (no cache)."""
        seq = list(ids)
        rows = []
        for _ in range(n_new):
            row = self.forward(seq)[-1]
            rows.append(row)
            seq.append(int(np.argmax(row)))
        return seq[len(ids):], np.stack(rows)


# ---------------------------------------------------------------------------------------------
# transformers in float64 with its fp32 islands patched (diagnostic, as in make_reference.py)
# ---------------------------------------------------------------------------------------------
# The Gemma 3 halves of oracle_common's float64 patches (see there): the x * (1 + w) norm and
# default / linear-scaled RoPE frequencies.

def _rms_forward_f64(self, x):
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
    return y * (1.0 + self.weight)


def _inv_freq_f64(rope_params, half):
    d = 2 * half
    theta = float(rope_params["rope_theta"])
    j = np.arange(half, dtype=np.float64)
    inv = theta ** (-2.0 * j / d)
    kind = rope_params.get("rope_type", "default")
    if kind == "linear":
        return inv / float(rope_params["factor"])
    if kind != "default":
        raise NotImplementedError(rope_params)
    return inv


def hf_float64_logits(ckpt_dir, ids):
    """(logits float64 [T, vocab], embed scale actually used) from transformers with float64 patches."""
    from transformers.models.gemma3 import modeling_gemma3 as mg

    return oc.float64_logits(load, ckpt_dir, ids, [
        (mg.Gemma3RMSNorm, "forward", _rms_forward_f64),
        (mg, "eager_attention_forward", oc.eager_attention_f64(mg.repeat_kv)),
        # the float64 formula must round to what transformers computed in fp32
        (mg.Gemma3RotaryEmbedding, "forward", oc.rope_forward_f64(_inv_freq_f64, rtol=2.0 ** -21)),
    ])


# ---------------------------------------------------------------------------------------------
# cross-checks
# ---------------------------------------------------------------------------------------------

SENSITIVITY = [
    ("attention scale 1/sqrt(head_dim) instead of 1/sqrt(query_pre_attn_scalar)", dict(scale="head_dim")),
    ("attention scale 1/sqrt(hidden/heads)", dict(scale="hidden_over_heads")),
    ("RMSNorm weights used as stored (no +1)", dict(norm_plus_one=False)),
    ("no linear RoPE scaling on full layers", dict(rope_linear=False)),
    ("sliding window off by one (q - k <= W)", dict(window_off_by_one=True)),
    ("no sliding window (all layers causal-full)", dict(no_window=True)),
    ("theta 1e6 on every layer", dict(one_theta=1000000.0)),
    ("theta 10000 on every layer", dict(one_theta=10000.0)),
    ("GPT-J interleaved RoPE instead of NeoX halves", dict(neox=False)),
    ("no q/k norm", dict(qk_norm=False)),
]


def numpy_crosscheck(case_dir, ids, hf_logits, hf_greedy_ids, hf_greedy_logits):
    res = {"implementation": "scripts/make_gemma3_reference.py Gemma3Ref (NumPy, float64, independent of "
                             "transformers' code: reads config.json and model.safetensors itself)"}
    try:
        ref_model = Gemma3Ref(case_dir)
        t0 = time.time()
        ref = ref_model.forward(ids)
        res["logits"] = {
            **oc.compare_logits(hf_logits, ref),
            "min_top1_top2_margin_numpy": float(oc.margins(ref).min()),
        }
        g_ids, g_rows = ref_model.greedy(ids, oc.N_GREEDY)
        res["greedy"] = {
            "what": "NumPy greedy by full recomputation (no cache) vs transformers' DynamicCache decode",
            **oc.compare_greedy(hf_greedy_ids, hf_greedy_logits, g_ids, g_rows),
        }
        hf64, scale = hf_float64_logits(case_dir, ids)
        res["hf_float64_patched_vs_numpy"] = {
            "what": "transformers run in float64 with its fp32 islands (RMSNorm, softmax, RoPE angles) "
                    "patched to float64, vs the NumPy float64 reference",
            "embed_scale_used_by_hf": scale,
            **oc.diff_record(hf64, ref),
        }
        tol = oc.FP32_REL_TOL * float(np.max(np.abs(ref)))
        sens = []
        for what, knobs in SENSITIVITY:
            bad = Gemma3Ref(case_dir, **knobs).forward(ids)
            db = float(np.max(np.abs(bad - ref)))
            sens.append({
                "bug": what,
                "max_abs_diff": db,
                "in_tolerances": db / tol,
                "n_argmax_flips": int((bad.argmax(-1) != ref.argmax(-1)).sum()),
                "caught": bool(db > tol),
                "applies": bool(db > 0.0),
            })
        res["sensitivity"] = {
            "what": "the NumPy reference with one deliberate mistake vs the correct one: max|diff| in units "
                    "of the fp32 engine tolerance (1e-3 * max|ref|); caught = exceeds the tolerance; "
                    "applies = false where the mistake changes nothing by construction in this case "
                    "(e.g. no linear scaling to forget, or query_pre_attn_scalar == hidden/heads)",
            "cases": sens,
        }
        res["seconds"] = time.time() - t0
        res["ok"] = True
    except Exception as e:  # recorded, and reported as a finding by main()
        res["ok"] = False
        res["error"] = f"{type(e).__name__}: {e}"
    return res


# ---------------------------------------------------------------------------------------------
# prompt choice
# ---------------------------------------------------------------------------------------------

def choose_prompt(model, spec, vocab, bos):
    """A seeded random prompt whose every top-1/top-2 margin (prompt positions and 16 greedy steps)
    is >= MIN_MARGIN and whose 16 greedy ids hold >= MIN_DISTINCT_GREEDY distinct ids.

    The prompt is drawn from default_rng(prompt_seed) (ids uniform in [3, vocab)). For a long prompt
    some positions are bound to be near-ties (about 3% of positions at vocab 256), so rather than
    hunting for a seed, the token AT the first failing position t is redrawn from the same generator
    (logits at t depend on ids[0..t], and nothing before t changes) and the forward is repeated;
    a failing greedy step (or a too repetitive continuation) redraws the last prompt token.
    Deterministic for a given seed.
    """
    rng = np.random.default_rng(spec["prompt_seed"])
    T = spec["n_tokens"]
    ids = [bos] + [int(x) for x in rng.integers(3, vocab, size=T - 1)]
    redrawn = []
    for _ in range(20 * T + 200):
        logits = oc.hf_forward(model, ids)
        m = oc.margins(logits)
        bad = np.nonzero(m < oc.MIN_MARGIN)[0]
        if len(bad):
            t = int(bad[0])
            if t == 0:
                raise RuntimeError("the margin at the BOS position is below MIN_MARGIN: change weight_seed")
            ids[t] = int(rng.integers(3, vocab))
            redrawn.append(t)
            continue
        g_ids, g_logits, prefill = oc.hf_greedy(model, ids, oc.N_GREEDY)
        if oc.margins(g_logits).min() < oc.MIN_MARGIN or len(set(g_ids)) < MIN_DISTINCT_GREEDY:
            ids[-1] = int(rng.integers(3, vocab))
            redrawn.append(T - 1)
            continue
        return ids, logits, (g_ids, g_logits, prefill), redrawn
    raise RuntimeError("no prompt with all margins >= MIN_MARGIN")


# ---------------------------------------------------------------------------------------------
# building one fixture
# ---------------------------------------------------------------------------------------------

def build_case(name, spec, out_root):
    t_start = time.time()
    case_dir = oc.fresh_dir(os.path.join(out_root, name))
    cfg, cls = build_config(spec)
    torch.manual_seed(spec["weight_seed"])         # HF's own init; everything is overwritten below
    model = cls(cfg).eval()
    init = dict(INIT)
    init.update(spec.get("init", {}))
    n_init = seeded_init(model, oc.text_config_of(model), spec["weight_seed"], init)
    # Run what transformers LOADS from the files, not the in-memory object.
    model = oc.save_and_reload(model, case_dir, name, load)
    tc = oc.text_config_of(model)
    vocab = tc.vocab_size

    ids, logits, (g_ids, g_logits, prefill), redrawn = choose_prompt(model, spec, vocab, tc.bos_token_id)
    m_prompt, m_greedy = oc.margins(logits), oc.margins(g_logits)
    self_check = oc.check_cached_decode(model, name, ids, logits, g_ids, g_logits, prefill)
    oc.write_fixture_arrays(case_dir, ids, logits, g_logits)

    np_check = numpy_crosscheck(case_dir, ids, logits, g_ids, g_logits)

    saved_cfg, _ = oc.read_config(case_dir)
    tensor_names = oc.tensor_names(os.path.join(case_dir, "model.safetensors"))
    prefix = text_prefix_of(set(tensor_names))
    text_tensors = [n for n in tensor_names if n.startswith(prefix)]
    other_tensors = sorted(n for n in tensor_names if not n.startswith(prefix))
    base = oc.decoder_of(model)
    a0 = base.layers[0].self_attn
    meta = {
        "case": name,
        "description": spec["description"],
        "oracle": "transformers (Hugging Face) Gemma 3, float32, eager attention, CPU",
        "layout": spec["layout"],
        "model_type": saved_cfg.get("model_type"),
        "architectures": saved_cfg.get("architectures"),
        "tensor_prefix": prefix,
        "tensor_prefix_in_memory": "model.language_model." if spec["layout"] == "multimodal" else "model.",
        "n_tensors": len(tensor_names),
        "n_text_tensors": len(text_tensors),
        "non_text_tensors": other_tensors,
        **oc.fixture_records(case_dir, ids, vocab, logits, g_ids, m_prompt, m_greedy),
        "model": {
            "layer_types": "".join("F" if t == FULL else "S" for t in tc.layer_types),
            "hidden_size": tc.hidden_size,
            "num_attention_heads": tc.num_attention_heads,
            "num_key_value_heads": tc.num_key_value_heads,
            "head_dim": tc.head_dim,
            "query_pre_attn_scalar": tc.query_pre_attn_scalar,
            "attention_scale_used": float(a0.scaling),
            "sliding_window": tc.sliding_window,
            "rope_parameters": tc.rope_parameters,
            "rope_inv_freq_head": {
                t: [float(x) for x in getattr(base.rotary_emb, f"{t}_inv_freq")[:4]] for t in sorted(set(tc.layer_types))
            },
            "rms_norm_eps": tc.rms_norm_eps,
            "norm_convention": "x / sqrt(mean(x^2) + eps) * (1 + w): the stored w is NOT the gain",
            "embed_scale_used": float(np.float32(math.sqrt(tc.hidden_size))),
            "final_logit_softcapping": tc.final_logit_softcapping,
            "attn_logit_softcapping": tc.attn_logit_softcapping,
            "lm_head_weight_stored": "lm_head.weight" in tensor_names,
        },
        "cross_check": {"numpy_reference": np_check, **self_check},
        "generator": {
            "script": "scripts/make_gemma3_reference.py",
            "command": f"/path/venv/bin/python scripts/make_gemma3_reference.py --out tests/data/hf-gemma3 --case {name}",
            **oc.versions(),
            "seed": spec["weight_seed"],
            "prompt_seed": spec["prompt_seed"],
            "prompt_positions_redrawn": redrawn,
            "prompt_rule": "ids[0] = 2 (<bos>), the rest uniform in [3, vocab) from "
                           "default_rng(prompt_seed); the token at the first position whose top-1/top-2 "
                           "margin is < 0.02 is redrawn from the same generator until none is (a failing "
                           f"greedy step, or fewer than {MIN_DISTINCT_GREEDY} distinct greedy ids, redraws "
                           "the last token); prompt_positions_redrawn lists them in order",
            "init": "projections N(0,1/fan_in); Gemma norms stored as w = g*(1 + 0.1 N(0,1)) - 1 "
                    "(effective gain 1 + w), g = pre_gain (input/pre_feedforward), post_gain "
                    "(post_attention/post_feedforward), final_gain (norm), "
                    f"sqrt({ATTN_SCORE_STD}*sqrt(qpas)/sqrt(head_dim)) (q/k norms); embed "
                    "N(0,(embed_rms/sqrt(H))^2); vision tensors N(0,1/fan_in), biases N(0,0.02^2), "
                    "LayerNorm 1+0.1N; each tensor from default_rng([seed, crc32(name without "
                    "model./model.language_model./language_model.model.)])",
            "init_params": init,
            "n_tensors_initialised": n_init,
            "torch_threads": torch.get_num_threads(),
            "seconds": time.time() - t_start,
        },
    }
    oc.write_json(os.path.join(case_dir, "meta.json"), meta, indent=2)

    size = oc.dir_bytes(case_dir)
    lg = np_check.get("logits", {})
    print(f"{name:20s} {spec['layout']:10s} T={len(ids):4d} {size/1e6:.2f} MB  min margin "
          f"{min(m_prompt.min(), m_greedy.min()):.3f}  max|logit| {meta['max_abs_logit']:.3f}  "
          f"|HF-numpy| {lg.get('max_abs_diff_rel', float('nan')):.2e} (rel)  "
          f"float64 {np_check.get('hf_float64_patched_vs_numpy', {}).get('max_abs_diff_rel', float('nan')):.1e}  "
          f"greedy ids equal: {np_check.get('greedy', {}).get('ids_equal')}  redrawn {len(redrawn)}  "
          f"{time.time() - t_start:.1f} s"
          + ("" if np_check.get("ok") else f"  NUMPY REF FAILED: {np_check.get('error')}"))
    for s in np_check.get("sensitivity", {}).get("cases", []):
        verdict = "caught" if s["caught"] else ("MISSED" if s["applies"] else "n/a")
        print(f"    {verdict:6s} {s['in_tolerances']:10.1f} tol  "
              f"{s['n_argmax_flips']:5d} argmax flips  {s['bug']}")
    return meta


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="write the fixtures under OUT/<case>/ (e.g. tests/data/hf-gemma3)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="only this case (repeatable)")
    args = ap.parse_args(argv)

    oc.setup_torch()
    print("versions:", json.dumps(oc.versions()))
    os.makedirs(args.out, exist_ok=True)
    status = 0
    total = 0
    for name in (args.case or list(CASES)):
        meta = build_case(name, CASES[name], args.out)
        npc = meta["cross_check"]["numpy_reference"]
        if not npc.get("ok"):
            print(f"  FINDING: {name}: the NumPy reference failed: {npc.get('error')}")
            status = 1
        elif (npc["logits"]["max_abs_diff_rel"] > oc.AGREE_REL or not npc["logits"]["argmax_equal_all_positions"]
              or not npc["greedy"]["ids_equal"] or npc["greedy"]["step_logits_max_abs_diff_rel"] > oc.AGREE_REL):
            print(f"  FINDING: {name}: transformers and NumPy differ: {json.dumps(npc['logits'])} "
                  f"{json.dumps(npc['greedy'])}")
            status = 1
        total += oc.dir_bytes(os.path.join(args.out, name))
    print(f"total {total/1e6:.2f} MB under {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
