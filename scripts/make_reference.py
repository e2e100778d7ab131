#!/usr/bin/env python3
"""Second oracle for g4: Hugging Face transformers' own Gemma 4 code.

Builds tiny random Gemma 4 text models from transformers' config classes, writes them with
`save_pretrained` (so the files are byte-for-byte what transformers writes), runs transformers'
forward in float32 (eager attention, CPU) and records the logits, in the same layout as the
golden cases in shared/golden/<case>/:

    config.json, generation_config.json, model.safetensors   (written by save_pretrained)
    input_ids.json      the prompt, a JSON list of ints, first id <bos> = 2
    logits.f32          raw little-endian float32 [T, vocab]: logits at every prompt position
    greedy_logits.f32   raw little-endian float32 [16, vocab]: row k is the distribution whose
                        argmax is greedy id k (row 0 = last row of logits.f32), computed through
                        transformers' own KV cache (DynamicCache, sliding layers keep W-1 tokens)
    meta.json           argmax, margins, tolerance, versions, seeds, cross-check numbers

Each fixture is also cross-checked against the NumPy float64 reference
(shared/reference/gemma4_ref.py) and the numbers go into meta.json.

    .venv-oracle/bin/python scripts/make_reference.py --out tests/data/hf
    .venv-oracle/bin/python scripts/make_reference.py --check-golden ../shared/golden
    .venv-oracle/bin/python scripts/make_reference.py --out tests/data/hf --case hf-e2b-like

--check-golden loads every golden checkpoint in transformers and prints how far transformers'
logits, hidden states and greedy ids are from the NumPy reference's golden files.

Nothing here touches the network (HF_HUB_OFFLINE=1; every model is built from a local config).
Versions are pinned in scripts/requirements-oracle.txt. See docs/oracles.md.
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

import oracle_common as oc  # scripts/oracle_common.py (scripts/ is sys.path[0])

oc.set_offline_env()  # before transformers / huggingface_hub are imported

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.models.gemma4 import (  # noqa: E402
    Gemma4Config,
    Gemma4ForCausalLM,
    Gemma4ForConditionalGeneration,
    Gemma4TextConfig,
)

oc.quiet_transformers()

SLIDING, FULL = oc.SLIDING, oc.FULL

# Initialisation (same scheme and same per-tensor generators as shared/reference/make_tiny.py;
# see its README "Tiny checkpoints" for the reasons). HF's default init (std 0.02, norms 1)
# gives a nearly linear network with tiny top-1/top-2 margins.
EMBED_RMS = 2.0        # embed_tokens ~ N(0, (2/sqrt(H))^2): x0 = E*sqrt(H) has RMS 2
ATTN_SCORE_STD = 1.5   # q_norm/k_norm weights carry sqrt(1.5/sqrt(hd)): raw scores have std ~1.5


def _rope(partial=0.25):
    return {
        SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
        FULL: {"rope_type": "proportional", "partial_rotary_factor": partial, "rope_theta": 1000000.0},
    }


COMMON = dict(
    vocab_size=512,
    hidden_activation="gelu_pytorch_tanh",
    rms_norm_eps=1e-6,
    final_logit_softcapping=30.0,
    tie_word_embeddings=True,
    attention_bias=False,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=oc.BOS,
    rope_parameters=_rope(),
)


def _toy_text(n_sliding, **overrides):
    """Text config of a toy case: two blocks of `n_sliding` sliding layers then one full layer,
    at the widths every case shares (hidden 64, 4 q heads, head dims 16 / 32, MLP 64, PLE vocab
    512); `overrides` sets the rest."""
    layer_types = ([SLIDING] * n_sliding + [FULL]) * 2
    text = dict(
        hidden_size=64,
        num_hidden_layers=len(layer_types),
        layer_types=layer_types,
        num_attention_heads=4,
        head_dim=16,
        global_head_dim=32,
        intermediate_size=64,
        vocab_size_per_layer_input=512,
        attention_k_eq_v=False,
    )
    text.update(overrides)
    return text

# The attention of the 31B and 26B-A4B at toy size: k_eq_v full layers with 1 KV head, 2 on the
# sliding ones, window 8, no KV sharing, no PLE, as released (use_bidirectional_attention).
LARGE_ATTENTION = dict(
            num_key_value_heads=2,
            num_global_key_value_heads=1,
            sliding_window=8,
            use_double_wide_mlp=False,
            num_kv_shared_layers=0,
            hidden_size_per_layer_input=0,
            attention_k_eq_v=True,
            use_bidirectional_attention="vision",
            max_position_embeddings=262144,
)

CASES = {
    "hf-e2b-like": dict(
        layout="multimodal",
        weight_seed=2024,
        prompt_seed=7000,
        n_tokens=28,
        description=(
            "E2B pattern at toy size, saved by transformers as Gemma4ForConditionalGeneration "
            "(tensors under model.language_model.). 10 layers (SSSSF)x2; the last 4 are KV-shared, "
            "so layers 6,7,8 read layer 5's K/V (last non-shared sliding) and layer 9 reads layer 4's "
            "(last non-shared full). MQA (4 q heads, 1 KV head), head dims 16 / 32 (proportional RoPE "
            "rotates dims 0..3 and 16..19 of 32), sliding window 7 crossed by a 28-token prompt, "
            "double-wide MLP 64 -> 128 on the shared layers, PLE width 8. transformers writes NO "
            "k_proj/v_proj/k_norm for the shared layers and a per_layer_config instead of "
            "global_head_dim."
        ),
        text=_toy_text(
            4,
            num_key_value_heads=1,
            sliding_window=7,
            use_double_wide_mlp=True,
            num_kv_shared_layers=4,
            hidden_size_per_layer_input=8,
            max_position_embeddings=131072,
        ),
    ),
    "hf-e4b-like": dict(
        layout="causal-lm",
        weight_seed=2025,
        prompt_seed=8000,
        n_tokens=26,
        description=(
            "E4B pattern at toy size, saved by transformers as Gemma4ForCausalLM (tensors under "
            "model., flat config). 12 layers (SSSSSF)x2; the last 6 are KV-shared, so layers 6..10 "
            "read layer 4's K/V and layer 11 reads layer 5's (the donors sit right before the "
            "first shared layer, as in the released E4B). GQA 4 q heads / 2 KV heads (query head j "
            "uses KV head j // 2), head dims 16 / 32, sliding window 6 crossed by a 26-token prompt, "
            "MLP 64 everywhere (no double-wide), PLE width 8."
        ),
        text=_toy_text(
            5,
            num_key_value_heads=2,
            sliding_window=6,
            use_double_wide_mlp=False,
            num_kv_shared_layers=6,
            hidden_size_per_layer_input=8,
            max_position_embeddings=131072,
        ),
    ),
    "hf-31b-like": dict(
        layout="multimodal",
        weight_seed=2026,
        prompt_seed=9000,
        n_tokens=24,
        description=(
            "31B pattern at toy size, saved by transformers as Gemma4ForConditionalGeneration. "
            "12 layers (SSSSSF)x2, no KV sharing, no PLE (hidden_size_per_layer_input 0). "
            "attention_k_eq_v: full layers have no v_proj and V is the raw K projection (before "
            "k_norm and RoPE, then the weightless v_norm); full layers use 1 KV head "
            "(num_global_key_value_heads, serialised as per_layer_config num_key_value_heads) while "
            "sliding layers use 2. 4 q heads, head dims 16 / 32, sliding window 8 crossed by a "
            "24-token prompt, MLP 64, use_bidirectional_attention 'vision' as released (text-only "
            "input is plain causal)."
        ),
        text=_toy_text(5, **LARGE_ATTENTION),
    ),
    "hf-26b-a4b-like": dict(
        layout="multimodal",
        weight_seed=2027,
        prompt_seed=10000,
        n_tokens=24,
        description=(
            "26B-A4B pattern at toy size, saved by transformers as Gemma4ForConditionalGeneration: "
            "12 layers (SSSSSF)x2, no KV sharing, no PLE, attention_k_eq_v (full layers: no v_proj, "
            "1 KV head; sliding layers 2), sliding window 8 crossed by a 24-token prompt, and on "
            "every layer the MoE block (spec 2.7) beside a dense MLP of 32: a router (weightless "
            "RMSNorm x router.scale x H^-0.5, projection to 8 experts, softmax, top-3, "
            "renormalised, x per_expert_scale) and 8 experts of width 16 (gate_up_proj [8, 32, "
            "64], down_proj [8, 64, 16]), each branch with its own post-norm."
        ),
        text=_toy_text(
            5,
            **LARGE_ATTENTION,
            intermediate_size=32,
            enable_moe_block=True,
            num_experts=8,
            top_k_experts=3,
            moe_intermediate_size=16,
        ),
    ),
    "hf-moe-ties": dict(
        layout="causal-lm",
        weight_seed=2028,
        prompt_seed=11000,
        n_tokens=20,
        description=(
            "Router ties, saved by transformers as Gemma4ForCausalLM: 6 layers (SSF)x2, 2 KV "
            "heads, sliding window 6, MoE with 6 experts, top-2, width 16. The router rows of "
            "experts 2..5 are zero on every layer, so their logits are exactly 0 and tie; "
            "whenever fewer than 2 of experts 0 and 1 score above 0, the choice among the tied "
            "ones decides the output (torch.topk's order)."
        ),
        zero_router_experts=[2, 3, 4, 5],
        text=_toy_text(
            2,
            num_key_value_heads=2,
            sliding_window=6,
            use_double_wide_mlp=False,
            num_kv_shared_layers=0,
            hidden_size_per_layer_input=0,
            max_position_embeddings=131072,
            enable_moe_block=True,
            num_experts=6,
            top_k_experts=2,
            moe_intermediate_size=16,
        ),
    ),
}


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------

def prompt_for(n_tokens, vocab, seed, bos=oc.BOS):
    rng = np.random.default_rng(seed)
    return [bos] + [int(x) for x in rng.integers(3, vocab, size=n_tokens - 1)]


# ---------------------------------------------------------------------------------------------
# seeded initialisation (make_tiny.py's scheme, applied to whatever tensors transformers made)
# ---------------------------------------------------------------------------------------------

def init_rule(short, shape, hidden):
    """(kind, arg) for a tensor named `short` (without the model./model.language_model. prefix)."""
    if short == "embed_tokens.weight":
        return ("normal", EMBED_RMS / math.sqrt(hidden))
    if short == "embed_tokens_per_layer.weight":
        return ("normal", 1.0)
    if short.endswith("layer_scalar"):
        return ("uniform", (0.5, 1.0))
    if short.endswith("self_attn.q_norm.weight") or short.endswith("self_attn.k_norm.weight"):
        return ("norm", math.sqrt(ATTN_SCORE_STD / math.sqrt(shape[0])))
    if short.endswith(("norm.weight", "_layernorm_1.weight", "_layernorm_2.weight",
                       "router.scale", "router.per_expert_scale")):
        return ("norm", None)
    if short.endswith("experts.gate_up_proj") or short.endswith("experts.down_proj"):
        return ("normal", 1.0 / math.sqrt(shape[2]))           # N(0, 1/fan_in) per expert
    if short.endswith("per_layer_input_gate.weight"):
        # reads the raw (un-normalised) residual stream, hence a quarter of 1/sqrt(fan_in)
        return ("normal", 0.25 / math.sqrt(shape[1]))
    if short.endswith(".weight") and len(shape) == 2:
        return ("normal", 1.0 / math.sqrt(shape[1]))          # N(0, 1/fan_in)
    raise ValueError(f"no init rule for tensor {short} {tuple(shape)}")


def seeded_init(model, hidden, seed):
    """Overwrite every persistent tensor (parameters and the layer_scalar buffers) in place."""
    def rule_of(name, shape):
        short = oc.strip_prefix(name, ("model.language_model.", "model."))
        return short, init_rule(short, shape, hidden)

    return oc.seeded_init(model, seed, rule_of)


# ---------------------------------------------------------------------------------------------
# model construction and running
# ---------------------------------------------------------------------------------------------

def build_config(spec):
    kw = dict(COMMON)
    kw.update(spec["text"])
    kw["layer_types"] = list(kw["layer_types"])
    tc = Gemma4TextConfig(**kw)
    if spec["layout"] == "causal-lm":
        return tc, Gemma4ForCausalLM
    cfg = Gemma4Config(text_config=tc.to_dict(), vision_config=None, audio_config=None)
    return cfg, Gemma4ForConditionalGeneration


def load(ckpt_dir, dtype=torch.float32):
    """Load a checkpoint folder in transformers, picking the class from config.json."""
    return oc.load_checkpoint(ckpt_dir, Gemma4ForCausalLM, Gemma4ForConditionalGeneration, dtype)


def hf_forward(model, ids, hidden=False):
    """Logits [T, vocab] of one fresh sequence; with hidden=True also [L+1, T, H] states.

    The states are taken with forward hooks, like golden hidden.f32: [0] = the scaled embedding
    x0 and [i+1] = the output of decoder layer i (after layer_scalar). (transformers' own
    output_hidden_states replaces the last entry by the final-normed state.)
    """
    if not hidden:
        return oc.hf_forward(model, ids)
    from transformers.models.gemma4 import modeling_gemma4 as mg

    states, hooks = [], []
    base = oc.decoder_of(model)
    hooks.append(base.embed_tokens.register_forward_hook(lambda m, i, o: states.append(o[0].float().numpy())))
    for layer in base.layers:
        assert isinstance(layer, mg.Gemma4TextDecoderLayer)
        hooks.append(layer.register_forward_hook(
            lambda m, i, o: states.append((o[0] if isinstance(o, tuple) else o)[0].float().numpy())))
    try:
        logits = oc.hf_forward(model, ids)
    finally:
        for h in hooks:
            h.remove()
    return logits, np.stack(states)


def kv_donors(tc):
    modes = tc.kv_sharing_modes
    lt = list(tc.layer_types)
    donors = {}
    for i, m in enumerate(modes):
        if m == "reuse":
            donors[i] = max(j for j in range(i) if modes[j] == "store" and lt[j] == lt[i])
    return donors


def layer_geometry(model):
    """Per-layer (head_dim, q heads, kv heads, mlp width) as transformers built them."""
    out = []
    for layer in oc.decoder_of(model).layers:
        a = layer.self_attn
        nq = a.q_proj.out_features // a.head_dim
        out.append({
            "head_dim": a.head_dim,
            "n_heads": nq,
            "n_kv_heads": nq // a.num_key_value_groups,
            "mlp_width": layer.mlp.intermediate_size,
            "has_k_proj": hasattr(a, "k_proj"),
            "has_v_proj": getattr(a, "v_proj", None) is not None,
        })
    return out


def moe_record(model, tc, ids):
    """The MoE shapes and how often the router's k-th and (k+1)-th probabilities tie (then
    torch.topk's order picks the expert), over every layer and prompt position."""
    k, ties, rows, chosen = tc.top_k_experts, 0, 0, []
    hooks = []

    def on_router(m, inputs, out):
        nonlocal ties, rows
        probs, _, index = out
        p = probs.detach().float().numpy()
        srt = -np.sort(-p, axis=-1)
        ties += int((srt[:, k - 1] == srt[:, k]).sum())
        rows += p.shape[0]
        chosen.append(index.detach().numpy().tolist())

    for layer in oc.decoder_of(model).layers:
        hooks.append(layer.router.register_forward_hook(on_router))
    try:
        oc.hf_forward(model, ids)
    finally:
        for h in hooks:
            h.remove()
    return {"num_experts": tc.num_experts, "top_k_experts": k,
            "moe_intermediate_size": tc.moe_intermediate_size,
            "router_rows": rows, "rows_with_a_tie_at_k": ties,
            "layer0_chosen_experts": chosen[0]}


# ---------------------------------------------------------------------------------------------
# diagnostic: transformers' graph with every fp32 island removed (float64 end to end)
# ---------------------------------------------------------------------------------------------
# The RMSNorm and RoPE-frequency halves of oracle_common's float64 patches (see there): Gemma 4's
# norm is x * w (weightless where with_scale is off) and its full layers use proportional RoPE.

def _rms_forward_f64(self, x):
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
    return y * self.weight if self.with_scale else y


def _inv_freq_f64(rope_params, half):
    d = 2 * half
    theta = float(rope_params["rope_theta"])
    j = np.arange(half, dtype=np.float64)
    inv = theta ** (-2.0 * j / d)
    if rope_params.get("rope_type", "default") == "proportional":
        inv = np.where(j < int(rope_params.get("partial_rotary_factor", 1.0) * d // 2), inv, 0.0)
    elif rope_params.get("rope_type", "default") != "default":
        raise NotImplementedError(rope_params)
    return inv / float(rope_params.get("factor", 1.0))


def hf_float64_logits(ckpt_dir, ids):
    """(logits float64 [T, vocab], embed scale actually used) from transformers with float64 patches."""
    from transformers.models.gemma4 import modeling_gemma4 as mg

    return oc.float64_logits(load, ckpt_dir, ids, [
        (mg.Gemma4RMSNorm, "forward", _rms_forward_f64),
        (mg, "eager_attention_forward", oc.eager_attention_f64(mg.repeat_kv)),
        # the float64 formula must round to exactly what transformers computed in fp32
        (mg.Gemma4TextRotaryEmbedding, "forward", oc.rope_forward_f64(_inv_freq_f64, rtol=2.0 ** -22)),
    ])


# ---------------------------------------------------------------------------------------------
# the NumPy reference (second oracle), imported from shared/reference
# ---------------------------------------------------------------------------------------------

def import_numpy_ref(shared):
    ref_dir = os.path.join(shared, "reference")
    if not os.path.isfile(os.path.join(ref_dir, "gemma4_ref.py")):
        return None
    sys.dont_write_bytecode = True
    if ref_dir not in sys.path:
        sys.path.insert(0, ref_dir)
    import gemma4_ref  # noqa: E402
    return gemma4_ref


def normalized_copy(case_dir, tmp):
    """A view of case_dir whose config.json has per_layer_config keys as plain integers.

    transformers zero-pads the keys ("05", "11") once a model has a layer index >= 10;
    shared/reference/gemma4_ref.py looks them up as str(i) and misses them.
    """
    cfg, tc = oc.read_config(case_dir)
    if tc.get("per_layer_config"):
        tc["per_layer_config"] = {str(int(k)): v for k, v in tc["per_layer_config"].items()}
    with open(os.path.join(tmp, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    os.symlink(os.path.abspath(os.path.join(case_dir, "model.safetensors")), os.path.join(tmp, "model.safetensors"))
    return tmp


def numpy_crosscheck(gref, case_dir, ids, hf_logits, hf_greedy_ids, hf_greedy_logits):
    """Compare transformers' fp32 logits with the NumPy float64 reference on the same files."""
    res = {"implementation": "shared/reference/gemma4_ref.py (NumPy, float64)"}
    try:
        gref.Gemma4Text(case_dir).forward(ids[:2])
        res["reads_saved_files"] = True
        read_dir, tmp = case_dir, None
    except Exception as e:  # the reference cannot read transformers' files as written: a finding
        res["reads_saved_files"] = False
        res["error_on_saved_files"] = f"{type(e).__name__}: {e}"
        tmp = tempfile.mkdtemp(prefix="g4-hf-ref-")
        read_dir = normalized_copy(case_dir, tmp)
        res["compared_on"] = "a copy of config.json with per_layer_config keys as str(int(key)) (same weights)"
    try:
        for mode in ("exact", "f32"):
            m = gref.Gemma4Text(read_dir, embed_scale_mode=mode)
            res[f"embed_scale_{mode}"] = oc.compare_logits(hf_logits, m.forward(ids))
            if mode == "f32":
                g = m.generate_greedy(ids, oc.N_GREEDY, check=True, tol=1e-9)
                res["greedy"] = oc.compare_greedy(hf_greedy_ids, hf_greedy_logits, g["ids"], g["step_logits"])
        hf64, scale = hf_float64_logits(case_dir, ids)
        H = oc.read_config(case_dir)[1]["hidden_size"]
        mode = "exact" if scale == math.sqrt(H) else "f32"
        ref = gref.Gemma4Text(read_dir, embed_scale_mode=mode).forward(ids)
        res["hf_float64_patched_vs_numpy"] = {
            "what": "transformers run in float64 with its fp32 islands (RMSNorm, softmax, RoPE angles) "
                    "patched to float64, vs the NumPy float64 reference with the same embed scale",
            "embed_scale_mode": mode,
            **oc.diff_record(hf64, ref),
        }
        res["ok"] = True
    except Exception as e:
        res["ok"] = False
        res["error"] = f"{type(e).__name__}: {e}"
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return res


# ---------------------------------------------------------------------------------------------
# building one fixture
# ---------------------------------------------------------------------------------------------

def build_case(name, spec, out_root, gref):
    case_dir = oc.fresh_dir(os.path.join(out_root, name))
    cfg, cls = build_config(spec)
    torch.manual_seed(spec["weight_seed"])         # HF's own init; everything is overwritten below
    model = cls(cfg).eval()
    n_init = seeded_init(model, oc.text_config_of(model).hidden_size, spec["weight_seed"])
    zero = spec.get("zero_router_experts")
    if zero:
        with torch.no_grad():
            for layer in oc.decoder_of(model).layers:
                layer.router.proj.weight[zero] = 0.0
    # Run what transformers LOADS from the files, not the in-memory object.
    model = oc.save_and_reload(model, case_dir, name, load)
    tc = oc.text_config_of(model)
    vocab = tc.vocab_size

    ids = None
    for attempt in range(200):
        pseed = spec["prompt_seed"] + attempt
        cand = prompt_for(spec["n_tokens"], vocab, pseed, bos=tc.bos_token_id)
        logits = hf_forward(model, cand)
        g_ids, g_logits, prefill = oc.hf_greedy(model, cand, oc.N_GREEDY)
        m_prompt, m_greedy = oc.margins(logits), oc.margins(g_logits)
        if min(m_prompt.min(), m_greedy.min()) >= oc.MIN_MARGIN:
            ids = cand
            break
    if ids is None:
        raise RuntimeError(f"{name}: no prompt seed with margins >= {oc.MIN_MARGIN}")

    self_check = oc.check_cached_decode(model, name, ids, logits, g_ids, g_logits, prefill)
    oc.write_fixture_arrays(case_dir, ids, logits, g_logits)

    if tc.enable_moe_block:
        np_check = {"ok": False, "skipped": "shared/reference/gemma4_ref.py has no MoE block"}
    elif gref:
        np_check = numpy_crosscheck(gref, case_dir, ids, logits, g_ids, g_logits)
    else:
        np_check = {"ok": False, "error": "shared/reference/gemma4_ref.py not found (pass --shared)"}

    geom = layer_geometry(model)
    moe = moe_record(model, tc, ids) if tc.enable_moe_block else None
    saved_cfg, _ = oc.read_config(case_dir)
    tensor_names = oc.tensor_names(os.path.join(case_dir, "model.safetensors"))
    meta = {
        "case": name,
        "description": spec["description"],
        "oracle": "transformers (Hugging Face) Gemma 4, float32, eager attention, CPU",
        "layout": spec["layout"],
        "architectures": saved_cfg.get("architectures"),
        "tensor_prefix": "model.language_model." if spec["layout"] == "multimodal" else "model.",
        "n_tensors": len(tensor_names),
        **oc.fixture_records(case_dir, ids, vocab, logits, g_ids, m_prompt, m_greedy),
        "model": {
            "layer_types": "".join("F" if t == FULL else "S" for t in tc.layer_types),
            "kv_donors": {str(k): v for k, v in kv_donors(tc).items()},
            "head_dims": [g["head_dim"] for g in geom],
            "kv_heads": [g["n_kv_heads"] for g in geom],
            "mlp_widths": [g["mlp_width"] for g in geom],
            "layers_with_k_proj": [i for i, g in enumerate(geom) if g["has_k_proj"]],
            "layers_with_v_proj": [i for i, g in enumerate(geom) if g["has_v_proj"]],
            "sliding_window": tc.sliding_window,
            "hidden_size_per_layer_input": tc.hidden_size_per_layer_input,
            "embed_scale_used": float(np.float32(math.sqrt(tc.hidden_size))),
            "lm_head_weight_stored": "lm_head.weight" in tensor_names,
            **({"moe": moe} if moe else {}),
        },
        "cross_check": {"numpy_reference": np_check, **self_check},
        "generator": {
            "script": "scripts/make_reference.py",
            "command": f".venv-oracle/bin/python scripts/make_reference.py --out tests/data/hf --case {name}",
            **oc.versions(),
            "seed": spec["weight_seed"],
            "prompt_seed": pseed,
            "init": "make_tiny.py scheme: projections N(0,1/fan_in), norms 1+0.1N(0,1), q/k norms "
                    "x sqrt(1.5/sqrt(head_dim)), embed N(0,(2/sqrt(H))^2), layer_scalar U(0.5,1), "
                    "per_layer_input_gate N(0,(0.25/sqrt(H))^2); each tensor from "
                    "default_rng([seed, crc32(name without prefix)])",
            "n_tensors_initialised": n_init,
            "torch_threads": torch.get_num_threads(),
        },
    }
    oc.write_json(os.path.join(case_dir, "meta.json"), meta, indent=2)

    size = oc.dir_bytes(case_dir)
    npx = np_check.get("embed_scale_exact", {})
    npf = np_check.get("embed_scale_f32", {})
    print(f"{name:13s} {spec['layout']:10s} T={len(ids):2d} {size/1e6:.2f} MB  min margin "
          f"{min(m_prompt.min(), m_greedy.min()):.3f}  max|logit| {meta['max_abs_logit']:.3f}  "
          f"|HF-numpy| exact {npx.get('max_abs_diff_rel', float('nan')):.2e}  "
          f"f32-scales {npf.get('max_abs_diff_rel', float('nan')):.2e}  "
          f"float64 {np_check.get('hf_float64_patched_vs_numpy', {}).get('max_abs_diff_rel', float('nan')):.1e} (rel)  "
          f"greedy ids equal: {np_check.get('greedy', {}).get('ids_equal')}"
          + ("" if np_check.get("ok") else f"  numpy reference skipped: {np_check['skipped']}"
             if "skipped" in np_check else f"  NUMPY REF FAILED: {np_check.get('error')}"))
    if not np_check.get("reads_saved_files", True):
        print(f"  note: the NumPy reference cannot read the saved config as written "
              f"({np_check['error_on_saved_files']}); compared on a copy with integer per_layer_config keys")
    return meta


# ---------------------------------------------------------------------------------------------
# --check-golden: transformers on the NumPy reference's golden cases
# ---------------------------------------------------------------------------------------------

def check_golden_case(case_dir):
    name = os.path.basename(os.path.normpath(case_dir))
    with open(os.path.join(case_dir, "meta.json")) as fh:
        meta = json.load(fh)
    with open(os.path.join(case_dir, "input_ids.json")) as fh:
        ids = [int(t) for t in json.load(fh)]
    model, info = load(case_dir)
    tc = oc.text_config_of(model)
    T, V, H, L = len(ids), tc.vocab_size, tc.hidden_size, tc.num_hidden_layers
    ref = oc.read_f32(os.path.join(case_dir, "logits.f32"), (T, V)).astype(np.float64)
    logits, hidden = hf_forward(model, ids, hidden=True)
    d = float(np.max(np.abs(logits - ref)))
    row = {
        "case": name,
        "weights": meta.get("checkpoint", {}).get("dtype"),
        "T": T,
        "max_abs_diff": d,
        "rel": oc.rel(d, ref),
        "max_abs_ref": float(np.max(np.abs(ref))),
        "argmax_equal": bool((logits.argmax(-1) == ref.argmax(-1)).all()),
        "n_argmax_diff": int((logits.argmax(-1) != ref.argmax(-1)).sum()),
        "missing_keys": sorted(info.get("missing_keys", [])),
        "unexpected_keys": sorted(info.get("unexpected_keys", [])),
        "mismatched_keys": sorted(info.get("mismatched_keys", [])),
    }
    # transformers in float64 (fp32 islands patched): isolates semantic differences from rounding
    hf64, scale = hf_float64_logits(case_dir, ids)
    d64 = float(np.max(np.abs(hf64 - ref)))
    row["hf_float64_patched"] = {"max_abs_diff": d64, "rel": oc.rel(d64, ref), "embed_scale": scale,
                                 "embed_scale_exact": scale == math.sqrt(H)}
    # hidden states: golden hidden.f32 is [L+1, T, H] = x0 and the output of every layer
    hpath = os.path.join(case_dir, "hidden.f32")
    if os.path.isfile(hpath):
        gh = oc.read_f32(hpath, (L + 1, T, H)).astype(np.float64)
        hh = hidden.astype(np.float64)
        assert hh.shape == gh.shape, (hh.shape, gh.shape)
        per = [float(np.max(np.abs(hh[i] - gh[i])) / np.max(np.abs(gh[i]))) for i in range(L + 1)]
        row["hidden_max_rel_per_state"] = per
        row["hidden_worst_state"] = int(np.argmax(per))
    # greedy through transformers' cache vs the golden greedy ids / greedy_logits.f32
    gpath = os.path.join(case_dir, "greedy_logits.f32")
    if "greedy" in meta and os.path.isfile(gpath):
        n = meta["greedy"]["n_new"]
        g_ids, g_logits, _ = oc.hf_greedy(model, ids, n)
        gref = oc.read_f32(gpath, (n, V)).astype(np.float64)
        dg = float(np.max(np.abs(g_logits - gref)))
        row["greedy_ids_equal"] = list(g_ids) == list(meta["greedy"]["ids"])
        row["greedy_max_abs_diff"] = dg
        row["greedy_rel"] = oc.rel(dg, gref)
    # tiny-bf16: transformers actually run in bfloat16, against the bf16-embed-scale reference
    bpath = os.path.join(case_dir, "logits_bf16_embed_scales.f32")
    if os.path.isfile(bpath):
        mb, _ = load(case_dir, dtype=torch.bfloat16)
        lb = hf_forward(mb, ids)
        refb = oc.read_f32(bpath, (T, V)).astype(np.float64)
        db = float(np.max(np.abs(lb - refb)))
        row["hf_bf16_run"] = {
            "max_abs_diff": db, "rel": oc.rel(db, refb),
            "n_argmax_diff": int((lb.argmax(-1) != refb.argmax(-1)).sum()),
        }
    return row


def check_golden(golden_root, names=None):
    cases = sorted(d for d in os.listdir(golden_root)
                   if os.path.isfile(os.path.join(golden_root, d, "logits.f32")))
    if names:
        cases = [c for c in cases if c in names]
    rows = [check_golden_case(os.path.join(golden_root, c)) for c in cases]
    print(f"\ntransformers {transformers.__version__} / torch {torch.__version__} (fp32, eager) "
          f"vs golden logits.f32 (NumPy float64, exact sqrt(H))")
    print(f"{'case':16s} {'T':>3s} {'max|diff|':>10s} {'rel':>9s} {'argmax':>7s} {'hidden worst':>18s} "
          f"{'greedy ids':>10s} {'greedy rel':>10s} {'f64 rel':>8s}  loading")
    worst = 0.0
    for r in rows:
        hw = (f"{max(r['hidden_max_rel_per_state']):.1e} @{r['hidden_worst_state']}"
              if "hidden_max_rel_per_state" in r else "-")
        load_note = "clean" if not (r["missing_keys"] or r["mismatched_keys"]) else \
            f"MISSING {r['missing_keys']} MISMATCHED {r['mismatched_keys']}"
        if r["unexpected_keys"]:
            load_note += f" (ignored {len(r['unexpected_keys'])} unexpected keys)"
        print(f"{r['case']:16s} {r['T']:3d} {r['max_abs_diff']:10.2e} {r['rel']:9.2e} "
              f"{'all' if r['argmax_equal'] else str(r['n_argmax_diff']) + ' diff':>7s} {hw:>18s} "
              f"{str(r.get('greedy_ids_equal', '-')):>10s} {r.get('greedy_rel', float('nan')):10.2e} "
              f"{r['hf_float64_patched']['rel']:8.1e}  {load_note}")
        worst = max(worst, r["rel"], r.get("greedy_rel", 0.0))
        if "hf_bf16_run" in r:
            b = r["hf_bf16_run"]
            print(f"{'':16s}     info: transformers run in bf16 vs logits_bf16_embed_scales.f32: "
                  f"max|diff| {b['max_abs_diff']:.3f} (rel {b['rel']:.3f}), argmax differs at {b['n_argmax_diff']} positions")
    verdict = "AGREE" if worst <= oc.AGREE_REL and all(r["argmax_equal"] and r.get("greedy_ids_equal", True)
                                                    for r in rows) else "DISAGREE"
    print("f64 rel: transformers run in float64 with its fp32 islands patched (RMSNorm, softmax, RoPE angles) vs "
          "logits.f32 (float64 rounded once to float32: ~3e-8 is the floor)")
    print(f"worst relative diff {worst:.2e} (threshold {oc.AGREE_REL:.0e}): the two oracles {verdict}")
    return rows, verdict


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the fixtures under OUT/<case>/ (e.g. tests/data/hf)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="only this case (repeatable)")
    ap.add_argument("--check-golden", metavar="GOLDEN_DIR",
                    help="load every golden case in transformers and compare with its logits")
    ap.add_argument("--golden-case", action="append", help="with --check-golden: only this case")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(oc.REPO), "shared"),
                    help="the shared/ folder holding reference/gemma4_ref.py (default: ../shared)")
    ap.add_argument("--json", help="also write the --check-golden table as JSON here")
    args = ap.parse_args(argv)
    if not args.out and not args.check_golden:
        ap.error("give --out and/or --check-golden")

    oc.setup_torch()
    print("versions:", json.dumps(oc.versions()))
    status = 0
    if args.out:
        gref = import_numpy_ref(args.shared)
        if gref is None:
            print(f"warning: no NumPy reference under {args.shared}/reference; skipping that cross-check")
        os.makedirs(args.out, exist_ok=True)
        total = 0
        for name in (args.case or list(CASES)):
            meta = build_case(name, CASES[name], args.out, gref)
            npc = meta["cross_check"]["numpy_reference"]
            if npc.get("ok") and npc["embed_scale_f32"]["max_abs_diff_rel"] > oc.AGREE_REL:
                print(f"  FINDING: {name}: transformers and NumPy differ by "
                      f"{npc['embed_scale_f32']['max_abs_diff_rel']:.2e} of max|logit|")
                status = 1
            total += oc.dir_bytes(os.path.join(args.out, name))
        print(f"total {total/1e6:.2f} MB under {args.out}")
    if args.check_golden:
        rows, verdict = check_golden(args.check_golden, args.golden_case)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=2)
        if verdict != "AGREE":
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
