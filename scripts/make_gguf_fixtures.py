#!/usr/bin/env python3
"""Writes the GGUF test fixtures of tests/model/gguf_model_test.cc with PyPI's `gguf` package
(gguf-py, llama.cpp's own writer and quantizers), so g4's reader is checked against an
independent writer.

    .venv-test/bin/python scripts/make_gguf_fixtures.py OUTDIR [--golden DIR]

From a golden safetensors case (default ../shared/golden/tiny-e2b-donors: PLE, KV sharing with
both donor types, double-wide MLP, sliding and full layers):
  model-f32.gguf                 every tensor F32, llama.cpp names and gemma4 metadata
  model-f16.gguf                 linears F16
  model-q8_0.gguf, model-q4_0.gguf
                                 linears (and, for q8_0, both embeddings) quantized with
                                 gguf.quants.quantize where the row length allows; norms F32
From a random model of the same structure but 256 wide (K-quant rows need 256 | K):
  bad-arch.gguf, bad-missing.gguf, bad-shape.gguf
                                 general.architecture "llama"; no blk.3.ffn_up.weight;
                                 blk.2.attn_q.weight 32 rows short
  model-q4_k.gguf, model-q6_k.gguf
                                 linears Q4_K / Q6_K and the embedding Q6_K as random but valid
                                 blocks (gguf-py cannot quantize K-quants)
From the transformers MoE case tests/data/hf/hf-26b-a4b-like (26B-A4B layout: router, experts,
k_eq_v):
  moe-f32.gguf                   every tensor F32, experts as ffn_gate_up_exps / ffn_down_exps
  moe-q8_0.gguf                  linears and expert stacks Q8_0 where the row length allows
  moe-split-q4_0.gguf            llama.cpp's other layout, ffn_gate_exps + ffn_up_exps, Q4_0
  bad-moe-used.gguf, bad-moe-missing.gguf
                                 expert_used_count 9 of 8 experts; no blk.3.ffn_down_exps.weight
For every file but the f32 ones, twin-NAME/{config.json, model.safetensors} holds the same model
with the DEQUANTIZED weights in F32 (gguf.quants.dequantize), so g4(gguf) can be compared
tightly with g4(twin).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GLOBAL_NAMES = {
    "embed_tokens.weight": "token_embd.weight",
    "embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
    "per_layer_model_projection.weight": "per_layer_model_proj.weight",
    "per_layer_projection_norm.weight": "per_layer_proj_norm.weight",
    "norm.weight": "output_norm.weight",
}
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "per_layer_input_gate.weight": "inp_gate.weight",
    "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight",
    "layer_scalar": "layer_output_scale.weight",
    "router.proj.weight": "ffn_gate_inp.weight",
    "router.scale": "ffn_gate_inp.scale",
    "router.per_expert_scale": "ffn_down_exps.scale",
    "experts.gate_up_proj": "ffn_gate_up_exps.weight",
    "experts.gate_proj": "ffn_gate_exps.weight",
    "experts.up_proj": "ffn_up_exps.weight",
    "experts.down_proj": "ffn_down_exps.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight",
    "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
}
LINEAR_SUFFIXES = ("_proj.weight", "per_layer_input_gate.weight", "per_layer_projection.weight",
                   "per_layer_model_projection.weight")
EMBEDS = ("embed_tokens.weight", "embed_tokens_per_layer.weight")
PREFIX = "model.language_model."
MOE_CASE = os.path.join(REPO, "tests", "data", "hf", "hf-26b-a4b-like")


def gguf_name(name):
    if name in GLOBAL_NAMES:
        return GLOBAL_NAMES[name]
    _, idx, rest = name.split(".", 2)
    return f"blk.{idx}.{LAYER_NAMES[rest]}"


def is_linear(name):
    return name.endswith(LINEAR_SUFFIXES)


def is_matrix(name):
    """A linear or an MoE expert stack [E, N, K] (quantized along K, as llama.cpp does)."""
    return is_linear(name) or ".experts." in name


def split_gate_up(tensors):
    """experts.gate_up_proj [E, 2I, H] -> experts.gate_proj and experts.up_proj [E, I, H]."""
    out = {}
    for name, arr in tensors.items():
        if name.endswith("experts.gate_up_proj"):
            half = arr.shape[1] // 2
            base = name[:-len("gate_up_proj")]
            out[base + "gate_proj"] = np.ascontiguousarray(arr[:, :half])
            out[base + "up_proj"] = np.ascontiguousarray(arr[:, half:])
        else:
            out[name] = arr
    return out


def fuse_gate_up(tensors):
    """The inverse of split_gate_up: the HF layout of a twin checkpoint."""
    out = {}
    for name, arr in tensors.items():
        if name.endswith("experts.gate_proj"):
            base = name[:-len("gate_proj")]
            out[base + "gate_up_proj"] = np.concatenate([arr, tensors[base + "up_proj"]], axis=1)
        elif not name.endswith("experts.up_proj"):
            out[name] = arr
    return out


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            assert info["dtype"] == "F32", (name, info["dtype"])
            b, e = info["data_offsets"]
            f.seek(base + b)
            arr = np.frombuffer(f.read(e - b), dtype="<f4").reshape(info["shape"])
            short = name[len(PREFIX):] if name.startswith(PREFIX) else name.removeprefix("model.")
            out[short] = arr
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[PREFIX + name] = {"dtype": "F32", "shape": list(arr.shape),
                                 "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def layer_widths(tc):
    n, shared = tc["num_hidden_layers"], tc.get("num_kv_shared_layers", 0)
    first_shared = n - shared
    wide = tc.get("use_double_wide_mlp", False)
    return [tc["intermediate_size"] * (2 if wide and shared and i >= first_shared else 1)
            for i in range(n)]


def write_gguf(path, tc, tensors, types, arch="gemma4", used_experts=None):
    """tensors: short name -> float32 array; types: short name -> (QT, bytes array) or absent.
    used_experts: overrides expert_used_count (a broken file)."""
    w = gguf.GGUFWriter(path, arch)
    a = arch + "."
    n = tc["num_hidden_layers"]
    w.add_string("general.name", "g4-gguf-fixture")
    w.add_uint32(a + "context_length", tc.get("max_position_embeddings", 131072))
    w.add_uint32(a + "embedding_length", tc["hidden_size"])
    w.add_uint32(a + "block_count", n)
    w.add_array(a + "feed_forward_length", layer_widths(tc))
    w.add_uint32(a + "attention.head_count", tc["num_attention_heads"])
    # transformers >= 5 writes the full layers' head dim and KV heads as per_layer_config.
    plc = tc.get("per_layer_config") or {}
    layer = lambda i, key, default: plc.get(f"{i:02d}", {}).get(key, default)
    w.add_array(a + "attention.head_count_kv",
                [layer(i, "num_key_value_heads", tc["num_key_value_heads"]) for i in range(n)])
    full = [i for i, t in enumerate(tc["layer_types"]) if t == "full_attention"]
    gh = (layer(full[0], "head_dim", None) if full else None) or tc.get("global_head_dim") \
        or tc["head_dim"]
    w.add_uint32(a + "attention.key_length", gh)
    w.add_uint32(a + "attention.value_length", gh)
    w.add_uint32(a + "attention.key_length_swa", tc["head_dim"])
    w.add_uint32(a + "attention.value_length_swa", tc["head_dim"])
    w.add_uint32(a + "rope.dimension_count", gh)
    w.add_uint32(a + "rope.dimension_count_swa", tc["head_dim"])
    rp = tc["rope_parameters"]
    w.add_float32(a + "rope.freq_base", float(rp["full_attention"]["rope_theta"]))
    w.add_float32(a + "rope.freq_base_swa", float(rp["sliding_attention"]["rope_theta"]))
    w.add_uint32(a + "attention.sliding_window", tc["sliding_window"])
    w.add_array(a + "attention.sliding_window_pattern",
                [t == "sliding_attention" for t in tc["layer_types"]])
    w.add_uint32(a + "attention.shared_kv_layers", tc.get("num_kv_shared_layers", 0))
    w.add_uint32(a + "embedding_length_per_layer_input", tc.get("hidden_size_per_layer_input", 0))
    w.add_float32(a + "attention.layer_norm_rms_epsilon", float(tc["rms_norm_eps"]))
    w.add_float32(a + "final_logit_softcapping", float(tc["final_logit_softcapping"]))
    if tc.get("enable_moe_block"):
        w.add_uint32(a + "expert_count", tc["num_experts"])
        w.add_uint32(a + "expert_used_count", used_experts or tc["top_k_experts"])
        w.add_uint32(a + "expert_feed_forward_length", tc["moe_intermediate_size"])
    w.add_uint32("tokenizer.ggml.bos_token_id", tc.get("bos_token_id", 2))
    w.add_uint32("tokenizer.ggml.eos_token_id", 1)
    w.add_uint32("tokenizer.ggml.padding_token_id", tc.get("pad_token_id", 0))
    # Proportional RoPE of the full layers as llama.cpp carries it: divisor 1 on the rotated
    # pairs, 1e30 (no rotation) on the rest.
    rotated = int(rp["full_attention"].get("partial_rotary_factor", 1.0) * gh / 2)
    freqs = np.full(gh // 2, 1e30, dtype=np.float32)
    freqs[:rotated] = 1.0
    w.add_tensor("rope_freqs.weight", freqs)
    for name, arr in tensors.items():
        if name in types:
            qt, data = types[name]
            w.add_tensor(gguf_name(name), data, raw_dtype=qt)
        else:
            w.add_tensor(gguf_name(name), np.ascontiguousarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize_model(tensors, qt, pick):
    """Quantizes the picked tensors with gguf-py; returns (types, dequantized twin tensors)."""
    types, twin = {}, {}
    block = gguf.GGML_QUANT_SIZES[qt][0]
    for name, arr in tensors.items():
        if pick(name) and arr.ndim in (2, 3) and arr.shape[-1] % block == 0:
            if qt == QT.F16:
                data = arr.astype(np.float16)
                types[name] = (QT.F16, data)
                twin[name] = data.astype(np.float32)
                continue
            data = gguf.quants.quantize(np.ascontiguousarray(arr, dtype=np.float32), qt)
            types[name] = (qt, data)
            twin[name] = gguf.quants.dequantize(data, qt).astype(np.float32).reshape(arr.shape)
        else:
            twin[name] = arr
    return types, twin


def random_kquant(rng, shape, qt):
    """Random but valid K-quant blocks of a [N, K] weight, with scales that keep values small."""
    n, k = shape
    block, nbytes = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, size=(n, k // block, nbytes), dtype=np.uint8)
    def half(x):
        return np.frombuffer(np.full(raw.shape[:2], x, dtype="<f2").tobytes(),
                             dtype=np.uint8).reshape(raw.shape[:2] + (2,))
    if qt == QT.Q4_K:  # half d; half dmin; u8 scales[12]; u8 qs[128]
        raw[..., 0:2] = half(1e-4)
        raw[..., 2:4] = half(8e-4)
    elif qt == QT.Q6_K:  # ql[128]; qh[64]; i8 scales[16]; half d
        raw[..., 208:210] = half(1e-5)
    else:
        raise ValueError(qt)
    data = raw.reshape(n, -1)
    return data, gguf.quants.dequantize(data, qt).astype(np.float32).reshape(shape)


def wide_model(golden_cfg, seed):
    """A random 256-wide model with the golden case's structure (rows fit 256-element blocks)."""
    cfg = json.loads(json.dumps(golden_cfg))
    tc = cfg["text_config"]
    tc.update(hidden_size=256, head_dim=64, global_head_dim=128, intermediate_size=256)
    rng = np.random.default_rng(seed)
    H, V, P, L = tc["hidden_size"], tc["vocab_size"], tc["hidden_size_per_layer_input"], \
        tc["num_hidden_layers"]
    nq, nkv = tc["num_attention_heads"], tc["num_key_value_heads"]
    widths = layer_widths(tc)
    shapes = {"embed_tokens.weight": (V, H), "embed_tokens_per_layer.weight": (V, L * P),
              "per_layer_model_projection.weight": (L * P, H),
              "per_layer_projection_norm.weight": (P,), "norm.weight": (H,)}
    for i, t in enumerate(tc["layer_types"]):
        hd = tc["global_head_dim"] if t == "full_attention" else tc["head_dim"]
        p = f"layers.{i}."
        for nm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm", "post_per_layer_input_norm"):
            shapes[p + nm + ".weight"] = (H,)
        shapes.update({p + "self_attn.q_proj.weight": (nq * hd, H),
                       p + "self_attn.q_norm.weight": (hd,),
                       p + "self_attn.k_proj.weight": (nkv * hd, H),
                       p + "self_attn.k_norm.weight": (hd,),
                       p + "self_attn.v_proj.weight": (nkv * hd, H),
                       p + "self_attn.o_proj.weight": (H, nq * hd),
                       p + "mlp.gate_proj.weight": (widths[i], H),
                       p + "mlp.up_proj.weight": (widths[i], H),
                       p + "mlp.down_proj.weight": (H, widths[i]),
                       p + "per_layer_input_gate.weight": (P, H),
                       p + "per_layer_projection.weight": (H, P),
                       p + "layer_scalar": (1,)})
    tensors = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            tensors[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            tensors[name] = (0.05 * rng.standard_normal(shape)).astype(np.float32)
    return cfg, tensors


def write_twin(dirpath, cfg, tensors):
    os.makedirs(dirpath, exist_ok=True)
    with open(os.path.join(dirpath, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    write_safetensors(os.path.join(dirpath, "model.safetensors"), tensors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--golden", default=os.path.join(REPO, "..", "shared", "golden",
                                                     "tiny-e2b-donors"))
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.golden, "config.json")) as f:
        cfg = json.load(f)
    tc = cfg["text_config"]
    tensors = read_safetensors(os.path.join(args.golden, "model.safetensors"))
    out = lambda name: os.path.join(args.outdir, name)

    write_gguf(out("model-f32.gguf"), tc, tensors, {})
    # Broken variants for the error tests: another architecture, a missing tensor, a wrong shape.
    write_gguf(out("bad-arch.gguf"), tc, tensors, {}, arch="llama")
    write_gguf(out("bad-missing.gguf"), tc,
               {k: v for k, v in tensors.items() if k != "layers.3.mlp.up_proj.weight"}, {})
    bad = dict(tensors)
    bad["layers.2.self_attn.q_proj.weight"] = tensors["layers.2.self_attn.q_proj.weight"][:-32]
    write_gguf(out("bad-shape.gguf"), tc, bad, {})
    for tag, qt, pick in (("f16", QT.F16, is_linear),
                          ("q8_0", QT.Q8_0, lambda n: is_linear(n) or n in EMBEDS),
                          ("q4_0", QT.Q4_0, is_linear)):
        types, twin = quantize_model(tensors, qt, pick)
        assert types, tag
        write_gguf(out(f"model-{tag}.gguf"), tc, tensors, types)
        write_twin(out(f"twin-{tag}"), cfg, twin)

    wcfg, wt = wide_model(cfg, seed=4)
    rng = np.random.default_rng(5)
    for tag, qt in (("q4_k", QT.Q4_K), ("q6_k", QT.Q6_K)):
        types, twin = {}, dict(wt)
        for name, arr in wt.items():
            kind = qt if is_linear(name) else QT.Q6_K if name == "embed_tokens.weight" else None
            if kind is not None and arr.ndim == 2 and arr.shape[1] % 256 == 0:
                data, deq = random_kquant(rng, arr.shape, kind)
                types[name] = (kind, data)
                twin[name] = deq
        write_gguf(out(f"model-{tag}.gguf"), wcfg["text_config"], twin, types)
        write_twin(out(f"twin-{tag}"), wcfg, twin)

    with open(os.path.join(MOE_CASE, "config.json")) as f:
        mcfg = json.load(f)
    mtc = mcfg["text_config"]
    mt = read_safetensors(os.path.join(MOE_CASE, "model.safetensors"))
    write_gguf(out("moe-f32.gguf"), mtc, mt, {})
    write_gguf(out("bad-moe-used.gguf"), mtc, mt, {}, used_experts=mtc["num_experts"] + 1)
    write_gguf(out("bad-moe-missing.gguf"), mtc,
               {k: v for k, v in mt.items() if k != "layers.3.experts.down_proj"}, {})
    types, twin = quantize_model(mt, QT.Q8_0, is_matrix)
    assert any(".experts." in n for n in types)
    write_gguf(out("moe-q8_0.gguf"), mtc, mt, types)
    write_twin(out("twin-moe-q8_0"), mcfg, twin)
    split = split_gate_up(mt)
    types, twin = quantize_model(split, QT.Q4_0, is_matrix)
    assert any(n.endswith("experts.up_proj") for n in types)
    write_gguf(out("moe-split-q4_0.gguf"), mtc, split, types)
    write_twin(out("twin-moe-split-q4_0"), mcfg, fuse_gate_up(twin))
    print(f"make_gguf_fixtures: wrote {args.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
