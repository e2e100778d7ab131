#!/usr/bin/env python3
"""What each of g4's LM head copies costs on real weights: the Gemma 3 270M's tied embedding.

    .venv-test/bin/python scripts/head_quant_accuracy.py --gguf ~/.cache/g4/models/gemma-3-270m-q4_k_m.gguf
    ... [--ppl-file tests/data/perplexity/sample.txt] [--ppl-ctx 128] [--json OUT]

transformers runs the file (scripts/gemma3_real_reference.py's Runner: fp32, eager) on the
perplexity text in llama.cpp's chunks; the final hidden states of every position then meet the
head as stored (the file's Q8_0 values, the reference here) and as each copy `--head` makes of
it, rounded exactly as g4 rounds them (src/ops/quantize.cc, src/ops/quantize_gguf.cc):
  q8    int8 rows, one f32 scale a row (absmax / 127, round half to even)
  q8_0  GGUF Q8_0 blocks of 32 (f16 d = absmax / 127, round half away from zero)
  q6_k  GGUF Q6_K: sub-blocks of 16 with scale absmax / 31.5, as int8 multiples of the 256
        block's f16 d = max scale / 127; q in [-32, 31] (half away from zero)
  q4    int4 groups of 32 with a bf16 scale absmax / 7.5 (half to even, [-8, 7])
The 270M's 640 columns are not whole Q6_K blocks (g4 refuses a q6_k head there): each row is
padded with zeros to 768, which changes nothing (zero sub-blocks get scale 0 and the block's d is
the max over its real sub-blocks), so the numbers are those of Q6_K on these values.
Per copy: perplexity by llama.cpp's protocol, and over every position of every chunk the mean
KL(stored || copy) in nats, top-1 agreement and rms logit error / rms logit.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma3_real_reference as ref  # noqa: E402


def round_away(x, torch):
    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)


def f16(x, torch):
    return x.to(torch.float16).to(torch.float32)


def q8_rows(w, torch):
    scale = (w.double().abs().amax(dim=1, keepdim=True) / 127.0).float()
    q = torch.where(scale > 0, torch.round(w / scale.clamp_min(1e-38)), torch.zeros_like(w))
    return q.clamp(-127, 127) * scale


def q8_0(w, torch):
    b = w.reshape(w.shape[0], -1, 32)
    d = b.abs().amax(dim=2, keepdim=True) / 127.0
    q = round_away(b * torch.where(d > 0, 1.0 / d.clamp_min(1e-38), torch.zeros_like(d)), torch)
    return (q * f16(d, torch)).reshape(w.shape)


def q6_k(w, torch):
    n, k = w.shape
    pad = (-k) % 256
    x = torch.nn.functional.pad(w, (0, pad)).reshape(n, -1, 16, 16)
    scale = x.abs().amax(dim=3, keepdim=True) / 31.5
    d = f16(scale.amax(dim=2, keepdim=True) / 127.0, torch)
    sc = torch.where(d > 0, round_away(scale / d.clamp_min(1e-38), torch).clamp(0, 127),
                     torch.zeros_like(scale))
    step = d * sc
    q = torch.where(step > 0, round_away(x / step.clamp_min(1e-38), torch).clamp(-32, 31),
                    torch.zeros_like(x))
    return (q * step).reshape(n, -1)[:, :k]


def q4_groups(w, torch):
    b = w.reshape(w.shape[0], -1, 32)
    scale = (b.double().abs().amax(dim=2, keepdim=True) / 7.5).float()
    scale = scale.to(torch.bfloat16).to(torch.float32)
    q = torch.where(scale > 0, torch.round(b / scale.clamp_min(1e-38)), torch.zeros_like(b))
    return (q.clamp(-8, 7) * scale).reshape(w.shape)


COPIES = {"q8": q8_rows, "q8_0": q8_0, "q6_k": q6_k, "q4": q4_groups}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--ppl-file", default=ref.DEFAULT_PPL_FILE)
    ap.add_argument("--ppl-ctx", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="also write the table as JSON here")
    args = ap.parse_args(argv)
    r = ref.Runner(args.gguf, args.threads)
    torch = r.torch
    model = r.model
    cap = getattr(model.config, "final_logit_softcapping", None)
    w = model.lm_head.weight.detach().float()
    heads = {"stored": w}
    heads.update({name: f(w, torch) for name, f in COPIES.items()})

    with open(args.ppl_file, "rb") as fh:
        text = fh.read().decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    tokens = r.encode(text, add_bos=True)
    n_ctx = args.ppl_ctx
    first = n_ctx // 2
    stats = {k: {"nll": 0.0, "count": 0, "kl": 0.0, "agree": 0, "ss_diff": 0.0, "ss_ref": 0.0}
             for k in heads}
    positions = 0
    for c in range(len(tokens) // n_ctx):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = ref.BOS
        hidden = model.model(input_ids=torch.tensor([chunk]), use_cache=False).last_hidden_state[0]
        logits = {}
        for name, h in heads.items():
            x = hidden @ h.T
            if cap:
                x = torch.tanh(x / cap) * cap
            logits[name] = x
        check = r.forward(chunk)  # the model's own head: the same logits
        assert np.allclose(check, logits["stored"].numpy(), atol=1e-3 * np.abs(check).max())
        ref_lp = torch.log_softmax(logits["stored"].double(), dim=1)
        positions += n_ctx
        for name, x in logits.items():
            s = stats[name]
            lp = torch.log_softmax(x.double(), dim=1)
            s["kl"] += float((ref_lp.exp() * (ref_lp - lp)).sum())
            s["agree"] += int((x.argmax(dim=1) == logits["stored"].argmax(dim=1)).sum())
            s["ss_diff"] += float(((x - logits["stored"]).double() ** 2).sum())
            s["ss_ref"] += float((logits["stored"].double() ** 2).sum())
            rows = x.numpy()
            for j in range(first, n_ctx - 1):
                s["nll"] += ref.llama_log_softmax_nll(rows[j], tokens[c * n_ctx + j + 1])
            s["count"] += n_ctx - first - 1
    table = {}
    base = math.exp(stats["stored"]["nll"] / stats["stored"]["count"])
    print(f"{positions} positions, {stats['stored']['count']} scored; ppl with the stored head {base:.4f}")
    print("| head | perplexity | vs stored | mean KL (nats) | same top token | rms error / rms logit |")
    print("|---|---|---|---|---|---|")
    for name, s in stats.items():
        ppl = math.exp(s["nll"] / s["count"])
        row = {"ppl": ppl, "ppl_change": ppl / base - 1, "mean_kl": s["kl"] / positions,
               "top1_agreement": s["agree"] / positions,
               "rms_error_over_rms_logit": math.sqrt(s["ss_diff"] / s["ss_ref"])}
        table[name] = row
        print(f"| {name} | {ppl:.4f} | {100 * row['ppl_change']:+.3f}% | {row['mean_kl']:.2e} | "
              f"{100 * row['top1_agreement']:.2f}% | {100 * row['rms_error_over_rms_logit']:.2f}% |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"positions": positions, "heads": table}, fh, indent=1)


if __name__ == "__main__":
    main()
