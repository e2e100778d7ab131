"""What the transformers oracles in scripts/ have in common.

Shared by make_reference.py (Gemma 4 fixtures, tests/data/hf),
make_gemma3_reference.py (Gemma 3 fixtures, tests/data/hf-gemma3) and
gemma3_real_reference.py (the reference for the real Gemma 3 270M GGUF, made
at test time). Each imports it as a sibling module (`python scripts/X.py` puts
scripts/ first on sys.path):

    import oracle_common as oc
    oc.set_offline_env()   # before torch / transformers are imported

Contents:
  * the offline environment, the fixture constants and `versions()`;
  * file helpers: `sha256`, `write_f32`, `read_f32`, `write_json`, `dir_bytes`,
    `fresh_dir`, `read_config`, `tensor_names`;
  * logits helpers: `margins` (top-1 minus top-2), `rel`, and the comparison
    records `diff_record`, `compare_logits`, `compare_greedy`;
  * transformers helpers: `quiet_transformers`, `setup_torch`,
    `load_checkpoint`, `hf_forward`, `greedy_decode` / `hf_greedy` (argmax
    loop through DynamicCache);
  * the tiny fixtures' build steps: `draw` / `seeded_init` (per-tensor seeded
    init), `save_and_reload`, `check_cached_decode`, `write_fixture_arrays`,
    `fixture_records` (the meta.json fields both fixture sets share);
  * the float64 diagnostic: `eager_attention_f64`, `rope_forward_f64` and
    `float64_logits`, which patch transformers' fp32 islands out.

Only NumPy is imported at module level: torch and transformers are imported
inside the functions that use them, so that importing this module costs nothing
and set_offline_env() still runs before transformers is loaded.

Anything here changes the output of all three scripts: regenerate the fixtures
(and check they are byte-identical where intended) after editing it. NB
scripts/gemma3_reference.sh remakes the real-model reference only when
gemma3_real_reference.py itself changes.
"""

import hashlib
import importlib
import json
import os
import shutil
import sys
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLIDING = "sliding_attention"
FULL = "full_attention"
BOS = 2
# Smallest allowed top-1/top-2 logit gap, prompt and greedy steps.
MIN_MARGIN = 0.02
N_GREEDY = 16          # greedy steps recorded per tiny fixture
# Engine tolerance: max|engine - ref| <= FP32_REL_TOL * max|ref|.
FP32_REL_TOL = 1e-3
# Two oracles that disagree beyond this (relative to max|ref|) is a finding.
AGREE_REL = 1e-4

_F32_FORMAT = "float32 little-endian, row-major, no header"


def set_offline_env():
    """Keeps transformers / huggingface_hub off the network.

    The variables are read when those packages are imported, so this must run
    first. setdefault: a caller's own setting wins.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def versions(packages=("torch", "transformers", "safetensors", "numpy")):
    """Returns {package: __version__} in the given order, then "python"."""
    out = {p: importlib.import_module(p).__version__ for p in packages}
    out["python"] = sys.version.split()[0]
    return out


# -------------------------------------------------------------------------
# files
# -------------------------------------------------------------------------

def sha256(path):
    """Hex SHA-256 of a file, read in 4 MiB chunks (the GGUF is ~250 MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def write_f32(path, arr):
    """Writes `arr` as raw little-endian float32, row-major, no header."""
    np.ascontiguousarray(arr, dtype="<f4").tofile(path)


def read_f32(path, shape):
    """Reads a write_f32 file back as a float32 array of `shape`."""
    return np.fromfile(path, dtype="<f4").reshape(shape)


def write_json(path, obj, **dump_kwargs):
    """json.dump(obj, **dump_kwargs) to `path`, then a final newline."""
    with open(path, "w") as fh:
        json.dump(obj, fh, **dump_kwargs)
        fh.write("\n")


def dir_bytes(path):
    """Total size of the files directly in folder `path`."""
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def fresh_dir(path):
    """Creates folder `path`, empty (a previous one is removed); returns it."""
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def read_config(ckpt_dir):
    """Returns (config.json of ckpt_dir, its text part).

    The text part is config["text_config"] for a multimodal checkpoint, the
    config itself for a causal-LM one (same object: editing it edits both).
    """
    with open(os.path.join(ckpt_dir, "config.json")) as fh:
        cfg = json.load(fh)
    text = cfg.get("text_config")
    return cfg, (text if isinstance(text, dict) else cfg)


def tensor_names(path):
    """The tensor names of a .safetensors file, in file order."""
    import safetensors

    with safetensors.safe_open(path, "np") as st:
        return list(st.keys())


# -------------------------------------------------------------------------
# logits
# -------------------------------------------------------------------------

def margins(logits):
    """Top-1 minus top-2 logit of every row of a 2-D array, in float64.

    The partition runs in the array's own dtype (float32 rows of a 262144
    vocab stay float32: no 2x copy); widening the two winners to float64 is
    exact, so the result equals sorting in float64.
    """
    top2 = np.partition(np.asarray(logits), -2, axis=-1)[:, -2:]
    return top2[:, 1].astype(np.float64) - top2[:, 0].astype(np.float64)


def rel(diff, ref):
    """`diff` relative to max|ref|."""
    return float(diff) / float(np.max(np.abs(ref)))


def diff_record(got, ref, prefix=""):
    """{max_abs_diff, max_abs_diff_rel} of `got` vs `ref`, keys prefixed."""
    d = float(np.max(np.abs(got - ref)))
    return {prefix + "max_abs_diff": d,
            prefix + "max_abs_diff_rel": rel(d, ref)}


def compare_logits(got, ref):
    """Record of fp32 logits `got` [T, vocab] against float64 `ref`."""
    return {
        **diff_record(got.astype(np.float64), ref),
        "argmax_equal_all_positions": bool(
            (ref.argmax(-1) == got.argmax(-1)).all()),
    }


def compare_greedy(got_ids, got_rows, ref_ids, ref_rows):
    """Record of greedy ids and step logits against a float64 reference's."""
    return {
        "ids_equal": [int(t) for t in ref_ids] == list(got_ids),
        **diff_record(got_rows.astype(np.float64), ref_rows, "step_logits_"),
    }


# -------------------------------------------------------------------------
# transformers
# -------------------------------------------------------------------------

def quiet_transformers():
    """Errors only, no progress bars: the scripts print their own summary."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def setup_torch():
    """One thread, deterministic kernels, no autograd."""
    import torch

    # One thread fixes the summation order: reproducible fp32 bits on a build.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_grad_enabled(False)


def text_config_of(model):
    """The text config of a causal-LM or multimodal transformers model."""
    return model.config.get_text_config()


def decoder_of(model):
    """The text decoder (embed_tokens, layers, rotary_emb) of either layout."""
    inner = model.model
    return inner.language_model if hasattr(inner, "language_model") else inner


def load_checkpoint(ckpt_dir, causal_cls, multimodal_cls, dtype):
    """Loads a checkpoint folder in transformers (eager attention, eval mode).

    Args:
      ckpt_dir: folder with config.json and model.safetensors.
      causal_cls: the class for a flat (text-only) config.json.
      multimodal_cls: the class for a config.json with a text_config.
      dtype: the torch dtype of the weights.

    Returns:
      (model, loading info: missing / unexpected / mismatched keys).
    """
    cfg, _ = read_config(ckpt_dir)
    multimodal = isinstance(cfg.get("text_config"), dict)
    cls = multimodal_cls if multimodal else causal_cls
    model, info = cls.from_pretrained(
        ckpt_dir, dtype=dtype, attn_implementation="eager",
        output_loading_info=True, local_files_only=True)
    model.eval()
    return model, info


def hf_forward(model, ids):
    """Logits [T, vocab] (float32) of one fresh sequence, without a cache."""
    import torch

    x = torch.tensor([ids], dtype=torch.long)
    out = model(input_ids=x, use_cache=False)
    return out.logits[0].float().numpy().astype(np.float32)


def greedy_decode(model, ids, n_new, cache_config, step_threads=None):
    """Greedy decode through transformers' own KV cache (DynamicCache).

    The prompt goes in one forward on a fresh cache, then one token per
    forward; no stop tokens. Step k's row is the distribution whose argmax
    (lowest id on an exact tie) is new id k; row 0 is the last prompt row.

    Args:
      model: a transformers causal LM.
      ids: the prompt ids.
      n_new: how many ids to generate.
      cache_config: the config the DynamicCache is built from.
      step_threads: torch threads for the one-token steps only (None: leave
        them as they are); restored afterwards.

    Returns:
      (new ids, list of n_new rows [vocab], prompt logits [T, vocab]).
    """
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=cache_config)
    x = torch.tensor([ids], dtype=torch.long)
    out = model(input_ids=x, cache=cache, use_cache=True)
    prefill = out.logits[0].float().numpy()
    cache = out.cache
    rows = [prefill[-1]]
    new = []
    threads = torch.get_num_threads()
    if step_threads:
        torch.set_num_threads(step_threads)
    try:
        for k in range(n_new):
            nxt = int(np.argmax(rows[-1]))
            new.append(nxt)
            if k == n_new - 1:
                break       # the last id needs no forward of its own
            step = torch.tensor([[nxt]], dtype=torch.long)
            out = model(input_ids=step, cache=cache, use_cache=True)
            cache = out.cache
            rows.append(out.logits[0, -1].float().numpy())
    finally:
        if step_threads:
            torch.set_num_threads(threads)
    return new, rows, prefill


def hf_greedy(model, ids, n_new):
    """greedy_decode in the fixtures' layout.

    Returns:
      (new ids, step logits float32 [n_new, vocab], prompt logits float32
      [T, vocab]).
    """
    new, rows, prefill = greedy_decode(model, ids, n_new, text_config_of(model))
    return new, np.stack(rows).astype(np.float32), prefill.astype(np.float32)


# -------------------------------------------------------------------------
# tiny fixtures: seeded initialisation, save, checks, records
# -------------------------------------------------------------------------

def draw(key, shape, rule, seed):
    """Draws one tensor (float32) from default_rng([seed, crc32(key)]).

    One generator per tensor, keyed by its name: a tensor's values do not
    depend on which other tensors the model has or their order.

    Args:
      key: the tensor's name as the init records it.
      shape: the tensor's shape.
      rule: (kind, arg): ("normal", std); ("norm", gain or None for 1):
        gain * (1 + 0.1 N(0,1)); ("gemma_norm", gain): the stored w of a
        Gemma x * (1 + w) norm whose effective gain is gain * (1 + 0.1 N(0,1));
        ("uniform", (low, high)).
      seed: the case's weight seed.

    Returns:
      The tensor as a float32 array.
    """
    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    kind, arg = rule
    if kind == "normal":
        x = rng.standard_normal(shape) * arg
    elif kind == "norm":
        gain = 1.0 if arg is None else arg
        x = gain * (1.0 + 0.1 * rng.standard_normal(shape))
    elif kind == "gemma_norm":
        x = arg * (1.0 + 0.1 * rng.standard_normal(shape)) - 1.0
    elif kind == "uniform":
        x = rng.uniform(arg[0], arg[1], size=shape)
    else:
        raise ValueError(kind)
    return x.astype(np.float32)


def strip_prefix(name, prefixes):
    """`name` without the first of `prefixes` it starts with."""
    for p in prefixes:
        if name.startswith(p):
            return name[len(p):]
    return name


def seeded_init(model, seed, rule_of):
    """Overwrites every persistent tensor of `model` in place with `draw`.

    Args:
      model: a transformers model with tied input / output embeddings.
      seed: the case's weight seed.
      rule_of: (state_dict name, shape) -> (draw key, draw rule).

    Returns:
      How many tensors were written.

    Raises:
      RuntimeError: lm_head is no longer tied to embed_tokens.
    """
    import torch

    done = 0
    for name, t in model.state_dict().items():
        if name == "lm_head.weight":
            continue                      # tied to embed_tokens
        shape = tuple(t.shape)
        key, rule = rule_of(name, shape)
        t.copy_(torch.from_numpy(draw(key, shape, rule, seed)))
        done += 1
    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings().weight
    if not torch.equal(emb, out):
        raise RuntimeError("lm_head is not tied to embed_tokens after init")
    return done


def save_and_reload(model, case_dir, name, load):
    """save_pretrained into case_dir, then loads it back with `load`.

    The fixtures' numbers come from what transformers LOADS from the files,
    not from the in-memory object, so the reload must be clean and every
    tensor must survive the round trip.

    Args:
      model: the initialised in-memory model.
      case_dir: the (empty) fixture folder.
      name: the case name, for the error messages.
      load: ckpt_dir -> (model, loading info).

    Returns:
      The reloaded model.

    Raises:
      RuntimeError: unexpected files, loading problems or changed tensors.
    """
    import torch

    model.save_pretrained(case_dir)
    saved = sorted(os.listdir(case_dir))
    for f in saved:
        # save_pretrained creates the weights 0600.
        os.chmod(os.path.join(case_dir, f), 0o644)
    allowed = {"config.json", "generation_config.json", "model.safetensors"}
    if not set(saved) <= allowed or "model.safetensors" not in saved:
        raise RuntimeError(f"{name}: save_pretrained wrote {saved}; "
                           "expected a single model.safetensors")
    loaded, info = load(case_dir)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise RuntimeError(f"{name}: reloading its own save reports {bad}")
    sd_mem, sd_load = model.state_dict(), loaded.state_dict()
    for k, v in sd_mem.items():
        if not torch.equal(v, sd_load[k]):
            raise RuntimeError(
                f"{name}: tensor {k} changed in the save/load round trip")
    return loaded


def check_cached_decode(model, name, ids, logits, g_ids, g_logits, prefill):
    """Checks transformers against itself.

    Its cached prefill against its no-cache forward, and its cached greedy
    steps against one full forward over prompt + generated ids.

    Returns:
      The two max|diff| as meta.json's cross_check records them.

    Raises:
      RuntimeError: the cached steps differ beyond AGREE_REL or in argmax.
    """
    prefill_diff = float(np.max(np.abs(prefill - logits)))
    full = hf_forward(model, ids + g_ids[:-1])
    tail = full[len(ids) - 1:]
    cache_diff = float(np.max(np.abs(tail - g_logits)))
    if (rel(cache_diff, tail) > AGREE_REL
            or not (tail.argmax(-1) == np.array(g_ids)).all()):
        raise RuntimeError(f"{name}: transformers' cached decode differs from "
                           f"its full forward by {cache_diff}")
    return {
        "hf_cached_prefill_vs_no_cache_max_abs_diff": prefill_diff,
        "hf_cached_greedy_vs_full_forward_max_abs_diff": cache_diff,
    }


def write_fixture_arrays(case_dir, ids, logits, g_logits):
    """Writes input_ids.json, logits.f32 and greedy_logits.f32."""
    write_json(os.path.join(case_dir, "input_ids.json"), ids)
    write_f32(os.path.join(case_dir, "logits.f32"), logits)
    write_f32(os.path.join(case_dir, "greedy_logits.f32"), g_logits)


def fixture_records(case_dir, ids, vocab, logits, g_ids, m_prompt, m_greedy):
    """The meta.json fields from "input_ids" to "tolerance", in file order.

    Both fixture sets splice them between their own fields. `case_dir` holds
    the written files; m_prompt / m_greedy are the margins of the prompt
    logits and of the greedy step logits.
    """
    max_abs = float(np.max(np.abs(logits)))
    return {
        "input_ids": "input_ids.json",
        "n_tokens": len(ids),
        "vocab_size": vocab,
        "files": {
            "logits.f32": {
                "shape": [len(ids), vocab],
                "what": "transformers fp32 logits at every prompt position "
                        "(no cache)",
                "dtype": _F32_FORMAT,
                "sha256": sha256(os.path.join(case_dir, "logits.f32")),
            },
            "greedy_logits.f32": {
                "shape": [N_GREEDY, vocab],
                "what": "row k: logits whose argmax is greedy id k (row 0 = "
                        "logits[-1]); transformers' DynamicCache decode path",
                "dtype": _F32_FORMAT,
                "sha256": sha256(os.path.join(case_dir, "greedy_logits.f32")),
            },
            "model.safetensors": {
                "sha256": sha256(os.path.join(case_dir, "model.safetensors"))},
        },
        "argmax": [int(a) for a in logits.argmax(-1)],
        "min_top1_top2_margin": float(m_prompt.min()),
        "max_abs_logit": max_abs,
        "greedy": {
            "n_new": N_GREEDY,
            "ids": [int(t) for t in g_ids],
            "rule": "argmax (lowest id on an exact tie) of the last position, "
                    "append, repeat; no stop tokens are applied (eos ids may "
                    "appear)",
            "min_top1_top2_margin": float(m_greedy.min()),
        },
        "tolerance": {
            "fp32_engine": {
                "rel": FP32_REL_TOL, "max_abs_diff": FP32_REL_TOL * max_abs,
                "also": "argmax equal at every position; identical greedy ids"},
            "note": "the reference itself is fp32 (transformers), not float64; "
                    "its own rounding is in cross_check (vs the float64 NumPy "
                    "reference), far below the tolerance",
        },
    }


# -------------------------------------------------------------------------
# diagnostic: transformers' graph with every fp32 island removed
# -------------------------------------------------------------------------
# In a float64 run transformers still computes RMSNorm in fp32 (`.float()`),
# the attention softmax in fp32 (`dtype=torch.float32`) and RoPE angles in fp32
# (fp32 inv_freq * fp32 positions). The patches keep the same formulas in
# float64, so that transformers and a NumPy float64 reference agree to ~1e-12
# instead of to fp32 noise: a semantic difference then stands out by many
# orders. The RMSNorm patch and the inv_freq formula are model-specific and
# live in the scripts.

def eager_attention_f64(repeat_kv):
    """transformers' eager_attention_forward without the fp32 softmax.

    Args:
      repeat_kv: the modeling module's repeat_kv (GQA head expansion).

    Returns:
      A replacement for that module's eager_attention_forward.
    """
    import torch

    def forward(module, query, key, value, attention_mask, dropout=0.0,
                scaling=None, softcap=None, **kwargs):
        del dropout, kwargs       # eval mode: no dropout
        if scaling is None:
            scaling = module.head_dim ** -0.5
        k = repeat_kv(key, module.num_key_value_groups)
        v = repeat_kv(value, module.num_key_value_groups)
        w = torch.matmul(query, k.transpose(2, 3)) * scaling
        if softcap is not None:
            w = torch.tanh(w / softcap) * softcap
        if attention_mask is not None:
            w = w + attention_mask
        w = torch.nn.functional.softmax(w, dim=-1)      # no fp32 upcast
        out = torch.matmul(w, v).transpose(1, 2).contiguous()
        return out, w

    return forward


def rope_forward_f64(inv_freq_f64, rtol):
    """A rotary embedding forward with float64 inverse frequencies and angles.

    Args:
      inv_freq_f64: (rope_parameters of a layer type, head_dim / 2) ->
        float64 inverse frequencies.
      rtol: how close the formula must round to transformers' fp32 inv_freq
        (the check that the formula is transformers' own).

    Returns:
      A replacement for the rotary embedding class's forward.
    """
    import torch

    def forward(self, x, position_ids, layer_type):
        inv32 = getattr(self, f"{layer_type}_inv_freq")
        inv64 = torch.from_numpy(inv_freq_f64(
            self.config.rope_parameters[layer_type], inv32.shape[-1]))
        if not torch.allclose(inv64.float(), inv32.float(), rtol=rtol,
                              atol=0.0):
            raise RuntimeError(f"{layer_type}: transformers' inv_freq differs "
                               f"from the formula: {inv32} vs {inv64}")
        freqs = position_ids[..., None].to(torch.float64) * inv64
        emb = torch.cat((freqs, freqs), dim=-1)
        scale = getattr(self, f"{layer_type}_attention_scaling")
        return (emb.cos() * scale).to(x.dtype), (emb.sin() * scale).to(x.dtype)

    return forward


def float64_logits(load, ckpt_dir, ids, patches):
    """Logits of transformers run in float64 with `patches` applied.

    Args:
      load: (ckpt_dir, dtype=...) -> (model, loading info).
      ckpt_dir: the checkpoint folder.
      ids: the prompt.
      patches: [(owner, attribute, replacement)], undone on return.

    Returns:
      (logits float64 [T, vocab], embed scale the model actually used).
    """
    import torch

    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patches]
    for owner, attr, fn in patches:
        setattr(owner, attr, fn)
    try:
        model, _ = load(ckpt_dir, dtype=torch.float64)
        x = torch.tensor([ids], dtype=torch.long)
        out = model(input_ids=x, use_cache=False)
        emb = model.get_input_embeddings()
        scale = float(emb.embed_scale.to(emb.weight.dtype))
        return out.logits[0].numpy().astype(np.float64), scale
    finally:
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)
