#!/usr/bin/env python3
"""Writes tests/data/gguf_blocks/<kind>.bin: random GGUF blocks and the PyPI `gguf` package's
numpy dequantization of them, the independent cross-check of g4's core/gguf_blocks.cc.

Each file: u32 block count n, u32 block bytes, u32 block elems, then n * bytes block bytes,
then n * elems f32 values (little-endian). Blocks are random bytes with their f16 fields (d,
dmin/m) overwritten by finite values of either sign, so every bit pattern of the packed
quants and K-quant scales is exercised. Run with the venv that has `gguf` and `numpy`:
  python3 -m venv /tmp/venv-gguf && /tmp/venv-gguf/bin/pip install gguf numpy
  /tmp/venv-gguf/bin/python scripts/make_gguf_block_fixture.py tests/data/gguf_blocks
"""
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

# kind name -> (ggml type, elems, bytes, byte offsets of f16 fields)
KINDS = {
    "q4_0": (T.Q4_0, 32, 18, [0]),
    "q4_1": (T.Q4_1, 32, 20, [0, 2]),
    "q5_0": (T.Q5_0, 32, 22, [0]),
    "q5_1": (T.Q5_1, 32, 24, [0, 2]),
    "q8_0": (T.Q8_0, 32, 34, [0]),
    "q4_k": (T.Q4_K, 256, 144, [0, 2]),
    "q5_k": (T.Q5_K, 256, 176, [0, 2]),
    "q6_k": (T.Q6_K, 256, 210, [208]),
}


def main(out_dir):
    rng = np.random.default_rng(20261130)
    os.makedirs(out_dir, exist_ok=True)
    for name, (qtype, elems, nbytes, halves) in KINDS.items():
        n = 16 if elems == 32 else 4
        blocks = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
        for b in range(n):
            for off in halves:
                v = np.float16(rng.uniform(-0.05, 0.05))
                blocks[b, off:off + 2] = np.frombuffer(v.tobytes(), dtype=np.uint8)
        values = quants.dequantize(blocks.reshape(1, n * nbytes), qtype).astype(np.float32)
        assert values.size == n * elems and np.all(np.isfinite(values)), name
        with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
            f.write(struct.pack("<III", n, nbytes, elems))
            f.write(blocks.tobytes())
            f.write(values.astype("<f4").tobytes())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/gguf_blocks")
