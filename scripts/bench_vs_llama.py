#!/usr/bin/env python3
"""g4 and llama.cpp on one machine, one file, one thread count, alternating runs.

    scripts/bench_vs_llama.py MODEL.gguf [--contexts 41,512,2048] [--rounds 3] [--threads 2]
                              [--matvec exact,q8] [--decode 64] [--g4 build/g4]
                              [--g4-model DIR] [--kv-dtype f32|bf16|q8] [--head auto|q8_0|q6_k]

Each round runs `g4 bench` once per --matvec (prefill of each context from empty; decode of
--decode tokens after it) and then, when LLAMA_BENCH names a llama-bench binary, llama-bench on
the same file with the same threads (pp<context>, and tg<decode> at depth <context>), so the
engines take turns on a machine whose speed drifts. Prints the medians over rounds side by side,
with the ratios g4 / llama.cpp, and the read bandwidth g4 measured in each of its runs. Without
LLAMA_BENCH only g4's columns are printed. Nothing is built or downloaded here: llama.cpp is
built outside this repository (see docs/speed.md). --g4-model gives g4 another checkpoint of the
same shapes (a W4A16 directory against llama.cpp's Q4_0 file of the same model). --kv-dtype is
g4's KV cache storage (llama-bench keeps its default, f16). The decode line at the end gives each
engine's decode at the last context against the first (the depth cost). --head is g4's LM head
(`g4 --head`; llama-bench reads the file's own).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_g4(g4, model, contexts, decode, threads, matvec, kv_dtype, head):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(
            [g4, "bench", "--model", model, "--contexts", ",".join(map(str, contexts)),
             "--decode", str(decode), "--threads", str(threads), "--matvec", matvec,
             "--kv-dtype", kv_dtype, "--head", head, "--json", f.name],
            check=True, capture_output=True, text=True)
        j = json.load(open(f.name))
    runs = {r["context"]: r for r in j["runs"]}
    return {c: (runs[c]["prefill_tok_s"], runs[c]["decode_tok_s"]) for c in contexts}, \
        j["read_bandwidth_bytes_per_s"] / 1e9, j["roofline_tok_s"]


def run_llama(llama_bench, model, contexts, decode, threads):
    pp = subprocess.run(
        [llama_bench, "-m", model, "-t", str(threads), "-r", "1", "-o", "json",
         "-p", ",".join(map(str, contexts)), "-n", "0"],
        check=True, capture_output=True, text=True).stdout
    tg = subprocess.run(
        [llama_bench, "-m", model, "-t", str(threads), "-r", "1", "-o", "json", "-p", "0",
         "-n", str(decode), "-d", ",".join(map(str, contexts))],
        check=True, capture_output=True, text=True).stdout
    res = {}
    for r in json.loads(pp):
        res.setdefault(r["n_prompt"], [None, None])[0] = r["avg_ts"]
    for r in json.loads(tg):
        res.setdefault(r["n_depth"], [None, None])[1] = r["avg_ts"]
    return {c: tuple(res[c]) for c in contexts}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--contexts", default="41,512,2048")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--matvec", default="exact,q8")
    ap.add_argument("--g4", default="build/g4")
    ap.add_argument("--g4-model", default="", help="g4 reads this instead of MODEL")
    ap.add_argument("--kv-dtype", default="f32", help="g4's KV cache storage")
    ap.add_argument("--head", default="auto", help="g4's LM head (g4 --head)")
    a = ap.parse_args()
    contexts = [int(c) for c in a.contexts.split(",")]
    matvecs = a.matvec.split(",")
    llama_bench = os.environ.get("LLAMA_BENCH", "")
    g4 = {m: [] for m in matvecs}
    llama, bandwidth, roofline = [], [], []
    for r in range(a.rounds):
        for m in matvecs:
            res, bw, roof = run_g4(a.g4, a.g4_model or a.model, contexts, a.decode, a.threads, m,
                                   a.kv_dtype, a.head)
            g4[m].append(res)
            bandwidth.append(bw)
            roofline.append(roof)
            print(f"round {r + 1}: g4 --matvec {m}: " + ", ".join(
                f"{c}: pp {p:.1f} tg {t:.1f}" for c, (p, t) in res.items()) +
                f" (read bandwidth {bw:.1f} GB/s)", file=sys.stderr)
        if llama_bench:
            llama.append(run_llama(llama_bench, a.model, contexts, a.decode, a.threads))
            print(f"round {r + 1}: llama.cpp: " + ", ".join(
                f"{c}: pp {p:.1f} tg {t:.1f}" for c, (p, t) in llama[-1].items()), file=sys.stderr)

    def med(samples, c, i):
        return statistics.median(s[c][i] for s in samples)

    g4_model = f" (g4: {os.path.basename(a.g4_model.rstrip('/'))})" if a.g4_model else ""
    print(f"model {os.path.basename(a.model)}{g4_model}, g4 KV {a.kv_dtype}, g4 head {a.head}, "
          f"{a.threads} threads, "
          f"{a.rounds} rounds (medians), decode {a.decode} tokens; g4 read bandwidth "
          f"{min(bandwidth):.1f}-{max(bandwidth):.1f} GB/s, "
          f"roofline {statistics.median(roofline):.1f} tok/s")
    for i, what in ((0, "prefill tok/s (context tokens from empty)"),
                    (1, "decode tok/s (after context tokens)")):
        head = ["context"] + (["llama.cpp"] if llama else []) + [f"g4 {m}" for m in matvecs]
        if llama:
            head += [f"g4 {m} / llama.cpp" for m in matvecs]
        print(f"\n{what}\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for c in contexts:
            row = [str(c)]
            ll = med(llama, c, i) if llama else None
            if llama:
                row.append(f"{ll:.1f}")
            row += [f"{med(g4[m], c, i):.1f}" for m in matvecs]
            if llama:
                row += [f"{med(g4[m], c, i) / ll:.2f}" for m in matvecs]
            print("| " + " | ".join(row) + " |")
        if i == 1:
            print("decode % of roofline: " + ", ".join(
                f"g4 {m} {100 * med(g4[m], contexts[0], 1) / statistics.median(roofline):.0f}%"
                for m in matvecs) + f" (context {contexts[0]})")
            first, last = contexts[0], contexts[-1]
            depth = [(f"g4 {m}", g4[m]) for m in matvecs]
            depth += [("llama.cpp", llama)] if llama else []
            print(f"decode at {last} against {first}: " + ", ".join(
                f"{name} {100 * (med(s, last, 1) / med(s, first, 1) - 1):+.1f}%"
                for name, s in depth))


if __name__ == "__main__":
    main()
