#!/usr/bin/env python3
"""transformers reference for the real Gemma 3 270M GGUF, generated at test time.

    /path/venv/bin/python scripts/gemma3_real_reference.py --gguf /work/models/gemma-3-270m-q4_k_m.gguf --out DIR
    ... [--quick] [--ppl-file tests/data/perplexity/sample.txt] [--ppl-ctx 128] [--threads N]

Loads the GGUF in transformers (`AutoModelForCausalLM.from_pretrained(dir, gguf_file=name,
dtype=float32)`: transformers' own GGUF loader dequantizes every tensor to fp32; eager attention,
CPU) and its GGUF tokenizer (`AutoTokenizer.from_pretrained(dir, gguf_file=name)`), and writes into
DIR:

  manifest.json            everything below (schema "g4-gemma3-real-reference/1")
  <case>.logits.f32        raw little-endian float32 [T, vocab], row-major, no header: logits at
                           every prompt position of that case (vocab = 262144, so 1 MiB per token)

Cases: "The capital of France is" with and without BOS, a ~530-token prose prompt (longer than the
512-token sliding window) and short prompts (prose, code, a list, a question, a date, JSON,
non-ASCII text); each with full logits, top-5 of the last position, argmax and top-1/top-2 margin at
every position, and 32 greedy ids (an explicit argmax loop through transformers' DynamicCache: the
prompt in one forward, then one token per forward; no stop tokens), with the margin of every step.
--quick writes no logits file for the long prompt (logits_file null; the 550 MB file is the only
big one) and keeps only the first 4 short prompts.

manifest.json (JSON, UTF-8, ensure_ascii false):
  schema               "g4-gemma3-real-reference/1"
  generator            {script, argv, quick, versions{torch, transformers, numpy, python, gguf},
                        torch_threads, torch_threads_decode, oracle, timings_s{...}}
  model                {path, bytes, sha256, sha256_prefix (16 hex), config{hidden_size, ...}}
  tokenizer            {source, class, bos_id, tokenizer_adds_bos_itself, france_ids_match_spec, encode_rule}
  vocab_size           262144
  logits_format        the sentence above
  cases                list of {name: str, text: str, add_bos: bool, ids: [int] (BOS included when
                        add_bos), n_tokens: int, logits_file: str | null (relative to DIR),
                        logits_shape: [T, vocab], top5: [{id: int, logit: float, piece: str}] of the
                        last position (descending), argmax: [int] per position, top1_top2_margin:
                        [float] per position, max_abs_logit: float, greedy: [int] x 32, greedy_text: str,
                        greedy_method: str, greedy_top1_top2_margin: [float] x 32 (step k = the row
                        whose argmax is greedy[k]), greedy_top1_logit: [float] x 32, seconds: float}
  greedy_generate_check  null, or {what, ids, equal_to_argmax_loop} with --generate-check
  perplexity           {file, file_sha256, file_bytes, trailing_newline_removed, ctx, n_chunks,
                        first_scored_position, scored_per_chunk, n_tokens_text, tokens: [int] (the
                        n_chunks*ctx ids used, as tokenized: tokens[0] = BOS, chunk starts NOT yet
                        replaced), tokens_unused_tail: [int], nll_sum: float, count: int, ppl: float,
                        running_ppl: [float] per chunk, nll_per_scored_token: [float], protocol, seconds}
  degenerate_check     {case, greedy, greedy_text, greedy_pieces, loop_period: int | null, loops: bool,
                        loop_rule, spec_says, with_bos_greedy_text, with_bos_loop_period}

Perplexity (manifest "perplexity"): llama.cpp's llama-perplexity protocol, default
(ppl_stride 0, no --kl-divergence) path of tools/perplexity/perplexity.cpp, `perplexity()`:

  1. text = the file's bytes as UTF-8; ONE trailing '\\n' is removed (common/arg.cpp, -f/--file:
     `if (!params.prompt.empty() && params.prompt.back() == '\\n') params.prompt.pop_back();`).
  2. tokens = common_tokenize(ctx, text, add_special=true, parse_special=false): the tokenizer's
     plain tokenization of the text with BOS (id 2) prepended because the vocab has add_bos = true;
     no EOS (llama.cpp asserts !add_eos).
  3. n_ctx = --ppl-ctx (default 128); requires len(tokens) >= 2*n_ctx;
     n_chunk = len(tokens) // n_ctx (floor; the tail is unused).
  4. chunk i = tokens[i*n_ctx : (i+1)*n_ctx], run as a FRESH sequence (KV cache cleared) at
     positions 0..n_ctx-1, with its first token replaced by BOS (add_bos && j == 0:
     `tokens[seq_start] = llama_vocab_bos(vocab)`; the original token is restored afterwards, and
     it is never a scored target).
  5. first = n_ctx / 2 (integer division). For j in [first, n_ctx - 1): nll_j =
     -log_softmax(logits[j])[tokens[i*n_ctx + j + 1]], with llama.cpp's log_softmax: max in float32,
     sum of expf(logit - max) in float64, nll = -((logit[tok] - max) - log(sum)). Each chunk scores
     n_ctx - 1 - first tokens (63 for n_ctx 128): `count += n_ctx - first - 1`.
  6. After chunk i the running value printed by llama.cpp is exp(nll_sum / count) ("[i+1]x.xxxx,");
     the final PPL = exp(nll_sum / count) over all chunks.
  (llama.cpp batches several chunks as parallel sequences when n_batch >= 2*n_ctx; each still has
  its own positions 0..n_ctx-1 and its own cache, so the numbers are the same.)
  Tokenization here is transformers' GGUF tokenizer with add_special_tokens=False plus an explicit
  BOS. The text must not contain special-token strings such as "<bos>" or "<start_of_turn>":
  transformers would match them as special tokens while llama.cpp (parse_special=false) spells them
  out as text.

Also recorded: the greedy continuation of "The capital of France is" WITHOUT BOS, with a loop
detector (manifest "degenerate_check"); shared/spec/gemma3.md says it loops " France. The The ...".

A GGUFReader parse of this file takes ~20 s in Python and transformers parses the file three times
(config, tokenizer, weights); this script memoises gguf.GGUFReader per path (same object, read-only
memmap) so it is parsed once. Nothing else of transformers' loader is changed.

Nothing here touches the network (HF_HUB_OFFLINE=1).
"""

import argparse
import hashlib
import math
import os
import sys
import time

import numpy as np

import oracle_common as oc  # scripts/oracle_common.py (scripts/ is sys.path[0])

oc.set_offline_env()  # before transformers (imported in Runner) / huggingface_hub

REPO = oc.REPO
SCHEMA = "g4-gemma3-real-reference/1"
BOS = oc.BOS
N_GREEDY = 32
DEFAULT_PPL_FILE = os.path.join(REPO, "tests", "data", "perplexity", "sample.txt")
DEFAULT_PPL_CTX = 128

FRANCE = "The capital of France is"
FRANCE_IDS_BOS = [2, 818, 5279, 529, 7001, 563]

# ~530 tokens of original prose (written for this file), longer than the 512-token sliding window.
LONG_PROMPT = (
    "Building a simple bookshelf is a good first project for anyone who wants to learn woodworking. "
    "You need four boards for the sides, top and bottom, a few more for the shelves, a thin sheet of "
    "plywood for the back, glue, screws and a little patience. Start by choosing the wood. Pine is cheap, "
    "light and easy to cut, but it dents if you look at it the wrong way. Oak and ash are harder and "
    "heavier, and they will last for generations, but they are more expensive and blunt your tools faster. "
    "For a first attempt, pine is fine.\n\n"
    "Measure twice and cut once. The old saying exists because every carpenter has ruined a board by "
    "trusting a number written on the back of an envelope. Mark each cut with a sharp pencil and a square, "
    "then cut on the waste side of the line so that the finished piece is exactly the size you wanted. "
    "If the two sides are not the same length, the shelf will wobble, and no amount of sanding will fix it.\n\n"
    "The shelves can rest on small wooden strips screwed to the inside of each side, or they can sit in "
    "shallow grooves called dadoes. Grooves are stronger and look neater, but they take longer to cut. "
    "Whichever you choose, check that each shelf is level before the glue sets. A spirit level costs very "
    "little and saves a great deal of frustration.\n\n"
    "Finishing is where many people lose interest, which is a pity, because it makes the biggest "
    "difference to how the piece looks. Sand every surface, starting with a coarse paper and moving to a "
    "fine one, always with the grain. Wipe away the dust with a damp cloth. Then apply a coat of oil, wax "
    "or varnish. Oil soaks into the wood and brings out the pattern of the grain; varnish forms a hard "
    "layer on top that resists water and scratches. Two thin coats are better than one thick one.\n\n"
    "Meanwhile, outside the workshop, the weather had turned. A cold wind came off the hills in the "
    "afternoon, bringing low clouds and a fine rain that seemed to hang in the air rather than fall. By "
    "evening the streets were empty, the shop windows glowed yellow, and the only sound was the steady "
    "drip of water from the gutters. In the morning there was frost on the car roofs, and the first "
    "geese of the winter were flying south in long, untidy lines, calling to each other as they went.\n\n"
    "A few numbers, for the record: the shelf is 180 centimetres tall, 80 wide and 30 deep. It holds "
    "about two hundred paperbacks, or one very large dictionary and a cat."
)

SHORT_PROMPTS = [
    ("story", "Once upon a time, in a small village by the sea, there lived"),
    ("code-python", "def fibonacci(n):"),
    ("list", "Shopping list:\n1. eggs\n2. milk\n3."),
    ("question", "Question: What is the boiling point of water at sea level in degrees Celsius?\nAnswer:"),
    ("date", "The Apollo 11 mission landed on the Moon on July 20,"),
    ("code-c", "#include <stdio.h>\n\nint main(void) {\n    printf("),
    ("json", '{"name": "Alice", "age": 30, "city":'),
    ("translation", "English: Good morning, how are you?\nFrench:"),
    ("non-ascii", "Le château de Versailles se trouve à"),
    ("cjk", "東京は日本の"),
]


# ---------------------------------------------------------------------------------------------

def memoise_gguf_reader():
    """transformers constructs gguf.GGUFReader(path) three times for one from_pretrained pair;
    hand back the same (read-only) reader for the same path."""
    import gguf

    orig = gguf.GGUFReader
    if getattr(orig, "_g4_memoised", False):
        return
    cache = {}

    def reader(path, mode="r"):
        key = (os.path.realpath(str(path)), mode)
        if key not in cache:
            cache[key] = orig(path, mode)
        return cache[key]

    reader._g4_memoised = True
    gguf.GGUFReader = reader
    import gguf.gguf_reader  # noqa: F401  (the class itself stays importable from there)


def llama_log_softmax_nll(row, tok):
    """llama.cpp perplexity.cpp log_softmax(): float max, sum of expf(x - max) in double."""
    row = np.asarray(row, dtype=np.float32)
    mx = np.float32(row.max())
    s = float(np.exp(row - mx, dtype=np.float32).sum(dtype=np.float64))
    return -(float(np.float32(row[tok] - mx)) - math.log(s))


def loop_period(ids, tail=12, max_period=8):
    """Smallest p <= max_period such that the last `tail` ids repeat with period p, else None."""
    t = ids[-tail:]
    for p in range(1, max_period + 1):
        if all(t[i] == t[i - p] for i in range(p, len(t))):
            return p
    return None


# ---------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, gguf_path, threads, decode_threads=1):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        oc.quiet_transformers()
        self.torch = torch
        torch.set_grad_enabled(False)
        if threads:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.decode_threads = decode_threads or self.threads
        memoise_gguf_reader()
        d, name = os.path.split(os.path.abspath(gguf_path))
        t = time.time()
        self.model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32,
                                                          attn_implementation="eager")
        self.model.eval()
        self.t_model = time.time() - t
        t = time.time()
        self.tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
        self.t_tok = time.time() - t
        self.vocab = self.model.config.vocab_size
        self.versions = oc.versions(("torch", "transformers", "numpy"))
        try:
            import gguf
            self.versions["gguf"] = getattr(gguf, "__version__", None) or _dist_version("gguf")
        except Exception:
            pass

    def encode(self, text, add_bos):
        ids = self.tok(text, add_special_tokens=False).input_ids
        return ([BOS] if add_bos else []) + [int(i) for i in ids]

    def piece(self, i):
        return self.tok.decode([int(i)])

    def forward(self, ids, keep_last=0):
        """Logits of one fresh sequence (no cache): [T, vocab], or [keep_last, vocab] for the last
        keep_last positions only (transformers' logits_to_keep: the head runs on those rows only)."""
        torch = self.torch
        out = self.model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False,
                         logits_to_keep=keep_last)
        return out.logits[0].float().numpy()

    def prefill_and_greedy(self, ids, n_new):
        """(prompt logits [T, vocab], greedy ids, greedy step margins, greedy step top-1 logits).

        The prompt goes through transformers in one forward with a fresh DynamicCache (so the prompt
        logits are those of a fresh sequence), then one token per forward through the cache; step k's
        distribution is the argmax source of greedy id k (step 0 = the last prompt row)."""
        # one-token steps are tiny ops plus a memory-bound 262144 x 640 head: extra threads mostly add
        # synchronisation (0.5 s/step with 2 threads on 2 busy cores vs 0.18 s with 1)
        new, rows, logits = oc.greedy_decode(self.model, ids, n_new, self.model.config,
                                             step_threads=self.decode_threads)
        step_margin = [float(oc.margins(row[None, :])[0]) for row in rows]
        step_top = [float(row[nxt]) for row, nxt in zip(rows, new)]
        return logits, new, step_margin, step_top

    def top5(self, row):
        idx = np.argsort(-row, kind="stable")[:5]
        return [{"id": int(i), "logit": float(row[i]), "piece": self.piece(i)} for i in idx]


def _dist_version(name):
    from importlib.metadata import version
    return version(name)


def run_case(r, out_dir, name, text, add_bos, write_logits, ids=None):
    t0 = time.time()
    if ids is None:
        ids = r.encode(text, add_bos)
    logits, g_ids, g_margin, g_top = r.prefill_and_greedy(ids, N_GREEDY)
    T, V = logits.shape
    logits_file = None
    if write_logits:
        logits_file = f"{name}.logits.f32"
        oc.write_f32(os.path.join(out_dir, logits_file), logits)
    m = oc.margins(logits)
    case = {
        "name": name,
        "text": text,
        "add_bos": bool(add_bos),
        "ids": [int(i) for i in ids],
        "n_tokens": T,
        "logits_file": logits_file,
        "logits_shape": [T, V],
        "top5": r.top5(logits[-1]),
        "argmax": [int(a) for a in logits.argmax(-1)],
        "top1_top2_margin": [round(float(x), 6) for x in m],
        "max_abs_logit": float(np.max(np.abs(logits))),
        "greedy": g_ids,
        "greedy_text": r.tok.decode(g_ids),
        "greedy_method": "explicit argmax loop through transformers' DynamicCache (prompt in one forward, "
                         "then one token per forward; argmax = lowest id on exact ties; no stop tokens)",
        "greedy_top1_top2_margin": [round(x, 6) for x in g_margin],
        "greedy_top1_logit": [round(x, 6) for x in g_top],
        "seconds": round(time.time() - t0, 3),
    }
    del logits
    return case


def perplexity(r, path, n_ctx):
    t0 = time.time()
    with open(path, "rb") as fh:
        raw = fh.read()
    text = raw.decode("utf-8")
    stripped_newline = text.endswith("\n")
    if stripped_newline:
        text = text[:-1]
    tokens = r.encode(text, add_bos=True)
    n = len(tokens)
    if n < 2 * n_ctx:
        raise SystemExit(f"perplexity: {path} tokenizes to {n} tokens; need at least 2*ctx = {2 * n_ctx}")
    n_chunk = n // n_ctx
    first = n_ctx // 2
    nll_sum, count = 0.0, 0
    running, per_token = [], []
    for i in range(n_chunk):
        start = i * n_ctx
        chunk = list(tokens[start:start + n_ctx])
        chunk[0] = BOS
        logits = r.forward(chunk, keep_last=n_ctx - first)       # rows for positions first..n_ctx-1
        for j in range(first, n_ctx - 1):
            v = llama_log_softmax_nll(logits[j - first], tokens[start + j + 1])
            nll_sum += v
            per_token.append(round(v, 6))
        count += n_ctx - first - 1
        running.append(math.exp(nll_sum / count))
        del logits
    used = tokens[:n_chunk * n_ctx]
    return {
        "file": os.path.relpath(os.path.abspath(path), REPO) if os.path.abspath(path).startswith(REPO) else path,
        "file_sha256": hashlib.sha256(raw).hexdigest(),
        "file_bytes": len(raw),
        "trailing_newline_removed": stripped_newline,
        "ctx": n_ctx,
        "n_chunks": n_chunk,
        "first_scored_position": first,
        "scored_per_chunk": n_ctx - first - 1,
        "n_tokens_text": n,
        "tokens": [int(t) for t in used],
        "tokens_unused_tail": [int(t) for t in tokens[n_chunk * n_ctx:]],
        "nll_sum": nll_sum,
        "count": count,
        "ppl": math.exp(nll_sum / count),
        "running_ppl": [round(x, 6) for x in running],
        "nll_per_scored_token": per_token,
        "protocol": "llama.cpp tools/perplexity/perplexity.cpp perplexity() (ppl_stride 0): tokens = [BOS] + "
                    "tokenize(text minus one trailing newline); n_chunks = len // ctx; chunk i = "
                    "tokens[i*ctx:(i+1)*ctx] as a fresh sequence at positions 0..ctx-1 with its first token "
                    "replaced by BOS; score j in [ctx/2, ctx-1): nll of tokens[i*ctx+j+1] under softmax("
                    "logits[j]); ppl = exp(nll_sum / count). nll_per_scored_token is in chunk order.",
        "seconds": round(time.time() - t0, 3),
    }


def main(argv=None):
    t_all = time.time()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True, help="the Gemma 3 270M GGUF (gemma-3-270m-q4_k_m.gguf)")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--quick", action="store_true",
                    help="no logits file for the long prompt; only the first 4 short prompts")
    ap.add_argument("--ppl-file", default=DEFAULT_PPL_FILE, help="text for the perplexity run")
    ap.add_argument("--ppl-ctx", type=int, default=DEFAULT_PPL_CTX, help="perplexity context (default 128)")
    ap.add_argument("--generate-check", action="store_true",
                    help="also run transformers' generate() on france-bos and compare with the argmax loop")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for prompt forwards (default 1; 0 = torch's choice, one per core)")
    ap.add_argument("--decode-threads", type=int, default=1,
                    help="torch threads for the one-token greedy steps (default 1; 0 = same as --threads)")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    timings = {}
    t = time.time()
    r = Runner(args.gguf, args.threads, args.decode_threads)
    timings["import_and_load"] = round(time.time() - t, 3)
    timings["load_model"] = round(r.t_model, 3)
    timings["load_tokenizer"] = round(r.t_tok, 3)
    print(f"loaded in {timings['import_and_load']:.1f} s (model {r.t_model:.1f} s, tokenizer {r.t_tok:.1f} s), "
          f"threads {r.threads} (decode {r.decode_threads})", flush=True)

    t = time.time()
    model_sha = oc.sha256(args.gguf)
    timings["sha256"] = round(time.time() - t, 3)

    # sanity: the tokenizer's own BOS handling and the ids the brief/spec quote
    auto = [int(i) for i in r.tok(FRANCE).input_ids]
    ours = r.encode(FRANCE, add_bos=True)
    tokenizer_notes = {
        "tokenizer_adds_bos_itself": auto == ours,
        "france_ids_match_spec": ours == FRANCE_IDS_BOS,
        "encode_rule": "ids = ([2] if add_bos else []) + tokenizer(text, add_special_tokens=False).input_ids",
    }
    if ours != FRANCE_IDS_BOS:
        print(f"WARNING: 'The capital of France is' tokenizes to {ours}, expected {FRANCE_IDS_BOS}")

    cases = []
    t = time.time()
    cases.append(run_case(r, args.out, "france-bos", FRANCE, True, True))
    cases.append(run_case(r, args.out, "france-nobos", FRANCE, False, True))
    shorts = SHORT_PROMPTS[:4] if args.quick else SHORT_PROMPTS
    for name, text in shorts:
        cases.append(run_case(r, args.out, name, text, True, True))
    timings["short_cases"] = round(time.time() - t, 3)
    print(f"short cases: {timings['short_cases']:.1f} s", flush=True)
    t = time.time()
    cases.append(run_case(r, args.out, "long-prose", LONG_PROMPT, True, not args.quick))
    timings["long_case"] = round(time.time() - t, 3)
    print(f"long case ({cases[-1]['n_tokens']} tokens): {timings['long_case']:.1f} s", flush=True)

    gen_check = None
    bos = next(c for c in cases if c["name"] == "france-bos")
    if args.generate_check:
        # greedy cross-check against transformers' generate() on the BOS case (min_new_tokens
        # suppresses EOS, which this continuation never reaches anyway)
        t = time.time()
        torch = r.torch
        torch.set_num_threads(r.decode_threads)
        gen = r.model.generate(torch.tensor([FRANCE_IDS_BOS]), max_new_tokens=N_GREEDY,
                               min_new_tokens=N_GREEDY, do_sample=False, num_beams=1)
        torch.set_num_threads(r.threads)
        gen_ids = [int(x) for x in gen[0, len(FRANCE_IDS_BOS):]]
        timings["generate_check"] = round(time.time() - t, 3)
        gen_check = {
            "what": "transformers generate(do_sample=False, num_beams=1, min/max_new_tokens=32) on france-bos",
            "ids": gen_ids,
            "equal_to_argmax_loop": gen_ids == bos["greedy"],
        }
    
    t = time.time()
    ppl = perplexity(r, args.ppl_file, args.ppl_ctx)
    timings["perplexity"] = round(time.time() - t, 3)
    print(f"perplexity {ppl['ppl']:.4f} over {ppl['n_chunks']} chunks x {ppl['scored_per_chunk']} "
          f"({timings['perplexity']:.1f} s)", flush=True)

    nobos = next(c for c in cases if c["name"] == "france-nobos")
    period = loop_period(nobos["greedy"])
    degenerate = {
        "case": "france-nobos",
        "greedy": nobos["greedy"],
        "greedy_text": nobos["greedy_text"],
        "greedy_pieces": [r.piece(i) for i in nobos["greedy"]],
        "loop_period": period,
        "loops": period is not None,
        "loop_rule": "the last 12 greedy ids repeat with period p <= 8 (smallest p reported)",
        "spec_says": "shared/spec/gemma3.md: without BOS the greedy continuation is ' France. The The The ...'",
        "with_bos_greedy_text": bos["greedy_text"],
        "with_bos_loop_period": loop_period(bos["greedy"]),
    }

    timings["total"] = round(time.time() - t_all, 3)
    manifest = {
        "schema": SCHEMA,
        "generator": {
            "script": "scripts/gemma3_real_reference.py",
            "argv": sys.argv[1:] if argv is None else list(argv),
            "quick": bool(args.quick),
            "versions": r.versions,
            "torch_threads": r.threads,
            "torch_threads_decode": r.decode_threads,
            "oracle": "transformers Gemma3ForCausalLM from the GGUF (dequantized to float32 by transformers' "
                      "GGUF loader), eager attention, CPU, float32",
            "timings_s": timings,
        },
        "model": {
            "path": os.path.abspath(args.gguf),
            "bytes": os.path.getsize(args.gguf),
            "sha256": model_sha,
            "sha256_prefix": model_sha[:16],
            "config": {k: v for k, v in r.model.config.to_dict().items()
                       if k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                "head_dim", "query_pre_attn_scalar", "sliding_window", "rope_parameters",
                                "rms_norm_eps", "vocab_size", "layer_types", "intermediate_size")},
        },
        "tokenizer": {"source": "transformers AutoTokenizer.from_pretrained(dir, gguf_file=name)",
                      "class": type(r.tok).__name__, "bos_id": BOS, **tokenizer_notes},
        "vocab_size": r.vocab,
        "logits_format": "raw little-endian float32, row-major [T, vocab_size], no header; row t = logits "
                         "after prompt position t (predicting token t+1)",
        "cases": cases,
        "greedy_generate_check": gen_check,
        "perplexity": ppl,
        "degenerate_check": degenerate,
    }
    oc.write_json(os.path.join(args.out, "manifest.json"), manifest, indent=1, ensure_ascii=False)

    total_bytes = oc.dir_bytes(args.out)
    print(f"france-bos   top5: " + ", ".join(f"{x['piece']!r} {x['logit']:.2f}" for x in bos["top5"]))
    print(f"france-bos   greedy: {bos['greedy_text']!r}")
    print(f"france-nobos greedy: {nobos['greedy_text']!r} (loop period {period})")
    for c in cases:
        print(f"  {c['name']:13s} T={c['n_tokens']:4d} min margin {min(c['top1_top2_margin']):.4f} "
              f"greedy min margin {min(c['greedy_top1_top2_margin']):.4f}  {c['seconds']:.1f} s  "
              f"{c['greedy_text'][:60]!r}")
    print(f"wrote {total_bytes / 1e6:.1f} MB to {args.out}; total {timings['total']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
