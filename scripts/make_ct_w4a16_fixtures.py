#!/usr/bin/env python3
"""W4A16 checkpoints written by compressed-tensors itself, for tests/model/ct_w4a16_test.sh.

g4's other W4A16 checkpoints come from its own writer (`g4 make-model --quant w4a16`), read by
the same understanding of the format. These come from the library that made Google's
-qat-w4a16-ct exports (PyPI compressed-tensors, pinned in scripts/requirements-test.txt):

  1. a tiny random Gemma4ForCausalLM from transformers' config classes, initialised like the
     transformers fixtures (scripts/make_reference.py), in float32;
  2. compressed-tensors' quantization config applied to every Linear but lm_head (W4A16:
     symmetric int4 weights), scales from compressed-tensors' calculate_qparams over each
     group's min/max (what llmcompressor's minmax observer does);
  3. ModelCompressor compresses it to the pack-quantized format, save_pretrained writes it and
     update_config adds quantization_config to config.json;
  4. transformers loads that folder back (its compressed-tensors quantizer decompresses the
     weights with compressed-tensors' own code) and its float32 logits for a fixed prompt are
     the reference. g4 never touches the reference.

    .venv-test/bin/python scripts/make_ct_w4a16_fixtures.py OUTDIR

writes OUTDIR/<case>/{config.json, generation_config.json, model.safetensors, input_ids.json,
logits.f32 [T, vocab], meta.json} for the cases group32 (strategy group, group_size 32) and
channel (strategy channel: one scale per output row). Scales are float32 (the model's dtype;
Google's exports store bf16). Every linear input width but per_layer_projection's (32) is 128
or 256, a multiple of 128, so g4's AVX-512 W4A16 decode kernel runs its block-128 path on them.

Exit status 77 (ctest SKIP_RETURN_CODE) when compressed_tensors is not installed.
"""

import argparse
import json
import os
import sys

try:
    import compressed_tensors
except ImportError:
    print("ct_w4a16: compressed_tensors is not installed in this venv "
          "(scripts/setup.sh installs scripts/requirements-test.txt); skipped")
    sys.exit(77)

import make_reference as mr  # scripts/make_reference.py (scripts/ is sys.path[0])
import oracle_common as oc

import numpy as np  # noqa: E402
import torch  # noqa: E402
from compressed_tensors.compressors import ModelCompressor  # noqa: E402
from compressed_tensors.quantization import (  # noqa: E402
    QuantizationArgs,
    QuantizationConfig,
    QuantizationScheme,
    QuantizationStatus,
    apply_quantization_config,
)
from compressed_tensors.quantization.utils import calculate_qparams  # noqa: E402
from transformers.models.gemma4 import Gemma4ForCausalLM, Gemma4TextConfig  # noqa: E402

SLIDING, FULL = oc.SLIDING, oc.FULL

# hidden 128, 4 query heads of 32 (sliding) / 64 (full), MLP 256, PLE width 32: the linears'
# input widths are 128, 256 and 32 (per_layer_projection, which reads the PLE width).
TEXT = dict(
    mr.COMMON,
    hidden_size=128,
    num_hidden_layers=6,
    layer_types=[SLIDING, SLIDING, FULL] * 2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    global_head_dim=64,
    intermediate_size=256,
    vocab_size_per_layer_input=512,
    hidden_size_per_layer_input=32,
    num_kv_shared_layers=0,
    sliding_window=8,
    use_double_wide_mlp=False,
    attention_k_eq_v=False,
    max_position_embeddings=4096,
)
WEIGHT_SEED = 3029
PROMPT_SEED = 3030
N_TOKENS = 20

CASES = {
    "group32": dict(strategy="group", group_size=32),
    "channel": dict(strategy="channel"),
}


def quantization_config(case):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, **case)
    scheme = QuantizationScheme(targets=["Linear"], weights=args)
    return QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"],
                              quantization_status=QuantizationStatus.FROZEN)


def observe_weights(model):
    """Sets every quantized Linear's scale (and zero point) from its weight's min and max, per
    group or per row, through compressed-tensors' calculate_qparams."""
    n = 0
    for name, module in model.named_modules():
        scheme = getattr(module, "quantization_scheme", None)
        if scheme is None or scheme.weights is None:
            continue
        args = scheme.weights
        w = module.weight.detach()
        if args.strategy == "group":
            g = w.unflatten(-1, (w.shape[-1] // args.group_size, args.group_size))
            lo, hi = g.amin(-1), g.amax(-1)
        else:  # channel
            lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
        scale, zp = calculate_qparams(lo, hi, args)
        module.weight_scale.data.copy_(scale.to(module.weight_scale.dtype))
        if hasattr(module, "weight_zero_point"):
            module.weight_zero_point.data.copy_(zp.to(module.weight_zero_point.dtype))
        n += 1
    return n


def build_case(name, case, out_root):
    case_dir = os.path.join(out_root, name)
    oc.fresh_dir(case_dir)
    config = Gemma4TextConfig(**TEXT)
    model = Gemma4ForCausalLM(config).eval()
    mr.seeded_init(model, TEXT["hidden_size"], WEIGHT_SEED)

    apply_quantization_config(model, quantization_config(case))
    quantized = observe_weights(model)
    compressor = ModelCompressor.from_pretrained_model(model, quantization_format="pack-quantized")
    compressor.compress_model(model)
    model.save_pretrained(case_dir)
    compressor.update_config(case_dir)

    # transformers reads the compressed folder as a user would; compressed-tensors decompresses.
    ref_model, info = mr.load(case_dir)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise RuntimeError(f"{name}: transformers reports {bad} loading the compressed folder")
    ids = mr.prompt_for(N_TOKENS, TEXT["vocab_size"], PROMPT_SEED)
    logits = oc.hf_forward(ref_model, ids)

    packed = [k for k in oc.tensor_names(os.path.join(case_dir, "model.safetensors"))
              if k.endswith(".weight_packed")]
    if len(packed) != quantized:
        raise RuntimeError(f"{name}: {quantized} linears quantized but {len(packed)} packed")
    oc.write_json(os.path.join(case_dir, "input_ids.json"), ids)
    oc.write_f32(os.path.join(case_dir, "logits.f32"), logits)
    m = oc.margins(logits)
    oc.write_json(os.path.join(case_dir, "meta.json"), {
        "description": f"tiny Gemma4ForCausalLM, W4A16 {case} by compressed-tensors",
        "quantization": case,
        "packed_linears": len(packed),
        "shape": list(logits.shape),
        "argmax": [int(a) for a in logits.argmax(-1)],
        "margins": [float(x) for x in m],
        "tolerance": {"max_abs_diff": 1e-3 * float(np.abs(logits).max())},
        "versions": oc.versions(("torch", "transformers", "compressed_tensors", "numpy")),
    })
    print(f"{name}: {len(packed)} packed linears, logits {logits.shape}, "
          f"max|ref| {np.abs(logits).max():.3f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="folder for the cases (created)")
    a = p.parse_args(argv)
    oc.setup_torch()
    os.makedirs(a.out, exist_ok=True)
    for name, case in CASES.items():
        build_case(name, case, a.out)


if __name__ == "__main__":
    main()
