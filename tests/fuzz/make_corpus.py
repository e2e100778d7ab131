#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<harness>/) from the
repository's fixtures and small hand-made inputs. Run from anywhere; only the standard library.
The committed corpus is this script's output plus the reproducers of fixed findings
(corpus/<harness>/regression-*), which it leaves alone."""
import json
import os
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
GOLDEN = os.path.join(ROOT, "..", "shared", "golden")
HF = os.path.join(ROOT, "tests", "data", "hf")


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def safetensors(entries, metadata=None, pad=0):
    """entries: [(name, dtype, shape)] -> a valid file with zero data."""
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "U8": 1, "I8": 1}
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in entries:
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + bytes(off)


def safetensors_seeds():
    put("safetensors", "empty-header", struct.pack("<Q", 2) + b"{}")
    put("safetensors", "one", safetensors([("w", "F32", [2, 3])], {"format": "pt"}))
    put("safetensors", "dtypes", safetensors(
        [("a", "BF16", [4]), ("b", "F16", [1, 2]), ("c", "I64", [1]), ("d", "U8", [3]),
         ("e", "I8", []), ("f", "I32", [0, 5])], pad=7))
    # The real tensor names and dtypes of the E2B-like fixture, with tiny shapes.
    path = os.path.join(HF, "hf-e2b-like", "model.safetensors")
    if os.path.exists(path):
        b = read(path)
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        ents = [(k, v["dtype"], [min(d, 2) for d in v["shape"]])
                for k, v in h.items() if k != "__metadata__"][:24]
        put("safetensors", "e2b-names", safetensors(ents, h.get("__metadata__")))
    # compressed-tensors (W4A16) names.
    put("safetensors", "int4", safetensors(
        [("m.weight_packed", "I32", [2, 1]), ("m.weight_scale", "BF16", [2, 1]),
         ("m.weight_shape", "I64", [2])]))


def index_seeds():
    put("safetensors_index", "ok", json.dumps(
        {"metadata": {"total_size": 15},
         "weight_map": {"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"}}))
    put("safetensors_index", "one-shard", json.dumps({"weight_map": {"z": "b.safetensors"}}))
    put("safetensors_index", "missing", json.dumps({"weight_map": {"q": "a.safetensors"}}))
    put("safetensors_index", "escape", json.dumps({"weight_map": {"x": "../a.safetensors"}}))


def config_seeds():
    for d in sorted(os.listdir(HF)) if os.path.isdir(HF) else []:
        p = os.path.join(HF, d)
        if os.path.exists(os.path.join(p, "config.json")):
            parts = [read(os.path.join(p, "config.json"))]
            g = os.path.join(p, "generation_config.json")
            if os.path.exists(g):
                parts.append(read(g))
            put("config", "hf-" + d, b"\0".join(parts))
    if os.path.isdir(GOLDEN):
        for d in sorted(os.listdir(GOLDEN)):
            c = os.path.join(GOLDEN, d, "config.json")
            if os.path.exists(c):
                put("config", "golden-" + d, read(c))
    # A W4A16 (compressed-tensors) export: quantization_config as `g4 make-model` writes it.
    put("config", "w4a16", json.dumps(
        {"model_type": "gemma4_text", "vocab_size": 64, "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
         "head_dim": 16, "intermediate_size": 64, "sliding_window": 8,
         "quantization_config": {
             "quant_method": "compressed-tensors", "format": "pack-quantized",
             "quantization_status": "compressed",
             "config_groups": {"group_0": {
                 "targets": ["Linear"], "format": "pack-quantized",
                 "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                             "strategy": "group", "group_size": 32, "dynamic": False,
                             "actorder": None, "block_structure": None},
                 "input_activations": None, "output_activations": None}},
             "ignore": ["lm_head", "re:.*embed.*"], "kv_cache_scheme": None}}))
    put("config", "tokenizer-config", b"{}\0{\"eos_token_id\":[1,106]}\0" + json.dumps(
        {"bos_token": "<bos>", "eos_token": {"content": "<eos>"}, "pad_token": "<pad>",
         "add_bos_token": True}).encode())
    put("config", "text-form", json.dumps(
        {"model_type": "gemma4_text", "vocab_size": 64, "hidden_size": 8,
         "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
         "head_dim": 4, "global_head_dim": 8, "intermediate_size": 16, "sliding_window": 8,
         "num_kv_shared_layers": 2, "use_double_wide_mlp": True, "attention_k_eq_v": True,
         "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                         "full_attention"],
         "per_layer_config": {"01": {"head_dim": 8}},
         "rope_parameters": {"full_attention": {"rope_type": "proportional",
                                                "partial_rotary_factor": 0.25,
                                                "rope_theta": 1e6}},
         "eos_token_id": [1, 106]}))


def tokenizer_seeds():
    def make(pieces, merges, added, as_strings):
        vocab = {"<0x%02X>" % b: b for b in range(256)}
        for p in pieces:
            vocab[p] = len(vocab)
        toks = []
        for content, special in added:
            if content not in vocab:
                vocab[content] = len(vocab)
            toks.append({"id": vocab[content], "content": content, "single_word": False,
                         "lstrip": False, "rstrip": False, "normalized": False,
                         "special": special})
        j = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": toks,
             "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
             "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                               "behavior": "MergedWithPrevious", "invert": False},
             "post_processor": None,
             "decoder": {"type": "Sequence", "decoders": [
                 {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                 {"type": "ByteFallback"}, {"type": "Fuse"}]},
             "model": {"type": "BPE", "dropout": None, "unk_token": None,
                       "continuing_subword_prefix": None, "end_of_word_suffix": None,
                       "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                       "vocab": vocab,
                       "merges": [a + " " + b if as_strings else [a, b] for a, b in merges]}}
        return json.dumps(j, ensure_ascii=False, separators=(",", ":"))

    pieces = ["a", "b", "ab", "\u2581", "\u2581ab", "H", "e", "l", "o", "He", "ll", "llo",
              "Hello", "\u2581w", "or", "ld", "\u2581wor", "\u2581world", "\n", "\n\n", ">"]
    merges = [("a", "b"), ("\u2581", "ab"), ("H", "e"), ("l", "l"), ("ll", "o"),
              ("He", "llo"), ("\u2581", "w"), ("o", "r"), ("l", "d"), ("\u2581w", "or"),
              ("\u2581wor", "ld")]
    added = [("<pad>", True), ("<eos>", True), ("<bos>", True), ("<unk>", True),
             ("<|turn>", True), ("<turn|>", True), ("<|tool_call>", True), ("\n\n", False)]
    put("tokenizer_json", "pairs", make(pieces, merges, added, False))
    put("tokenizer_json", "strings", make(pieces, merges, added, True))
    put("tokenizer_json", "no-added", make(pieces[:5], merges[:2], [], False))


def chat_seeds():
    base = {"model": "gemma-4-e2b"}

    def body(**kw):
        d = dict(base)
        d.update(kw)
        return json.dumps(d)

    put("chat_request", "hello", body(messages=[{"role": "user", "content": "Hi"}]))
    put("chat_request", "system-stream", body(
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Hi"}],
        stream=True, stream_options={"include_usage": True}, temperature=0.7, top_p=0.9,
        top_k=40, max_tokens=32, stop=["\n\n"], seed=7))
    put("chat_request", "tools-history", body(messages=[
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"role": "assistant", "content": None, "reasoning_content": "look it up",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "get_weather",
                                      "arguments": "{\"city\": \"Paris\", \"days\": [1, 2]}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "<|channel>thought\nok<channel|>It is 21."},
        {"role": "developer", "content": "later system"}],
        chat_template_kwargs={"enable_thinking": True}, tools=[
            {"type": "function", "function": {
                "name": "get_weather", "description": "Weather",
                "parameters": {"type": "object", "properties": {
                    "city": {"type": "string", "enum": ["Paris", "Rome"]},
                    "days": {"type": "array", "items": {"type": "integer"}}},
                    "required": ["city"]}}}]))
    put("chat_request", "bad-role", body(messages=[{"role": "wizard", "content": 1}],
                                         n=2, logprobs=True, top_logprobs=3))


def openai_seeds():
    put("openai_request", "completion-text", b"\0" + json.dumps(
        {"model": "gemma-4-e2b", "prompt": "Once upon", "max_tokens": 16, "echo": True,
         "logprobs": 2, "stop": "\n", "stop_token_ids": [1]}).encode())
    put("openai_request", "completion-ids", b"\0" + json.dumps(
        {"prompt": [2, 651, 9999999], "max_tokens": 8000, "temperature": 0,
         "repetition_penalty": 1.1, "min_p": 0.05}).encode())
    put("openai_request", "tokenize", b"\1" + json.dumps(
        {"model": "gemma-4-e2b", "prompt": "Hello", "add_special_tokens": False,
         "return_token_strs": True}).encode())
    put("openai_request", "tokenize-chat", b"\1" + json.dumps(
        {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": True,
         "chat_template_kwargs": {"enable_thinking": False}}).encode())
    put("openai_request", "detokenize", b"\2" + json.dumps(
        {"model": "gemma-4-e2b", "tokens": [2, 9259, -1]}).encode())


def tool_call_seeds():
    q = '<|"|>'
    put("tool_call", "call", "<|tool_call>call:get_weather{city:" + q + "Paris" + q +
        ",days:[1,2],units:{c:true,f:None}}<tool_call|>")
    put("tool_call", "thought-call", "<|channel>thought\nI should call it.<channel|>"
        "<|tool_call>call:f{a:'x',b:\"y\",n:-1.5e3}<tool_call|><tool_call|>call:g{}<turn|>")
    put("tool_call", "plain", "Hello there.\n<turn|><eos>")
    put("tool_call", "unterminated", "reason<channel|>answer<|tool_call>call:h{x:" + q + "open")


def gguf_seeds():
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    def kv(key, vtype, payload):
        return s(key) + struct.pack("<I", vtype) + payload

    def arr(etype, items):
        return struct.pack("<IQ", etype, len(items)) + b"".join(items)

    # Value types: u8 0, i8 1, u16 2, i16 3, u32 4, i32 5, f32 6, bool 7, string 8, array 9,
    # u64 10, i64 11, f64 12. ggml types: F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12, Q6_K 14, BF16 30.
    def gguf(kvs, tensors, version=3, align=32):
        infos, data = b"", b""
        for name, ne, gtype, nbytes in tensors:
            data += bytes((-len(data)) % align)
            infos += s(name) + struct.pack("<I", len(ne)) + b"".join(
                struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", gtype, len(data))
            data += bytes(nbytes)
        head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
        head += infos
        return head + bytes((-len(head)) % align) + data

    meta = [kv("general.architecture", 8, s("gemma4")),
            kv("general.name", 8, s("tiny")),
            kv("gemma4.block_count", 4, struct.pack("<I", 2)),
            kv("gemma4.context_length", 10, struct.pack("<Q", 8192)),
            kv("gemma4.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-6)),
            kv("gemma4.final_logit_softcapping", 12, struct.pack("<d", 30.0)),
            kv("tokenizer.ggml.add_bos_token", 7, b"\1"),
            kv("gemma4.attention.sliding_window_pattern", 9,
               arr(7, [b"\1", b"\0"])),
            kv("tokenizer.ggml.tokens", 9, arr(8, [s("<pad>"), s("<eos>"), s("<bos>"), s("a")])),
            kv("tokenizer.ggml.scores", 9, arr(6, [struct.pack("<f", -1.0)] * 4)),
            kv("tokenizer.ggml.token_type", 9, arr(5, [struct.pack("<i", 1)] * 4)),
            kv("nested", 9, arr(9, [arr(1, [b"\xff"]), arr(3, [])]))]
    put("gguf", "tiny", gguf(meta, [("token_embd.weight", [32, 4], 0, 32 * 4 * 4),
                                    ("blk.0.attn_q.weight", [32, 2], 8, 2 * 34),
                                    ("blk.0.ffn_up.weight", [32, 3], 2, 3 * 18),
                                    ("blk.0.attn_norm.weight", [32], 1, 64),
                                    ("blk.0.bf16", [8, 2], 30, 32)]))
    put("gguf", "kquants", gguf([kv("general.alignment", 4, struct.pack("<I", 64))],
                                [("q4k", [256, 2], 12, 2 * 144), ("q6k", [256], 14, 210)],
                                align=64))
    put("gguf", "v2-empty", gguf([], [], version=2))


def http_seeds():
    body = json.dumps({"model": "tiny", "prompt": "Hi", "max_tokens": 4}).encode()
    post = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    get = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    put("http_request", "post", post)
    put("http_request", "get", get)
    put("http_request", "keep-alive-pipelined", get + post + get)
    put("http_request", "chunked", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    put("http_request", "stream", b"POST /v1/stream HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
    put("http_request", "expect-continue", b"POST /v1/completions HTTP/1.1\r\n"
        b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}")
    put("http_request", "half-body", b"POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"pro")
    put("http_request", "half-header", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
    put("http_request", "close", b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n" + get)


def main():
    safetensors_seeds()
    index_seeds()
    config_seeds()
    tokenizer_seeds()
    chat_seeds()
    openai_seeds()
    tool_call_seeds()
    gguf_seeds()
    http_seeds()
    total = sum(os.path.getsize(os.path.join(dp, f))
                for dp, _, fs in os.walk(CORPUS) for f in fs)
    print("corpus: %d bytes in %s" % (total, CORPUS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
