#!/usr/bin/env python3
"""g4 pull and --model ORG/NAME against a fake Hub (tests/tools/fake_hub.py) on loopback, and
against huggingface_hub itself (.venv-test) on the same cache, both ways:

  * g4 pull, then huggingface_hub offline finds the files (same paths, same bytes), and
    g4 logits --model ORG/NAME offline gives the logits of the local checkpoint;
  * huggingface_hub downloads, then g4 logits --model ORG/NAME offline runs from its cache;
  * --revision (a tag: refs/v1), --include, a second pull downloads nothing;
  * a GGUF repo: its only .gguf is the model, several need ORG/NAME:FILE.gguf;
  * g4 waits for huggingface_hub's lock on a blob;
  * a download cut half way is resumed with a Range request; corrupt bytes (wrong sha256) are
    refused and removed; 404 and 401 name the repo (401 says HF_TOKEN), HF_TOKEN opens the
    gated repo; HF_HUB_OFFLINE=1 makes no request; an unreachable hub is a network error;
  * progress lines on stderr at most every half second; a .safetensors file as --model is
    refused, saying a checkpoint directory or a .gguf file is expected.

    python tests/tools/pull_test.py path/to/g4
Exits 77 (skipped) without huggingface_hub, unless the environment variable CI is set.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"pull_test: FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def main():
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        print("pull_test: huggingface_hub missing (run scripts/setup.sh); skipped")
        return 1 if os.environ.get("CI") else 77
    g4 = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="g4_pull_test_")
    procs = []
    try:
        run_tests(g4, tmp, procs)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("pull_test: ok")
    return 0


def run_tests(g4, tmp, procs):
    model = os.path.join(tmp, "m")
    r = subprocess.run([g4, "make-model", "--preset", "tiny", "--dtype", "bf16", "--seed", "3",
                        "--out", model], capture_output=True, text=True)
    check(r.returncode == 0, f"make-model: {r.stderr}")
    os.makedirs(os.path.join(model, "extra"))
    with open(os.path.join(model, "extra", "notes.txt"), "w") as f:
        f.write("a nested file\n")
    files = sorted(os.path.relpath(os.path.join(d, n), model).replace(os.sep, "/")
                   for d, _, ns in os.walk(model) for n in ns)
    check("model.safetensors" in files and "config.json" in files, f"checkpoint: {files}")

    # A GGUF repo with two quantizations: --model needs :FILE.gguf to pick one.
    gguf_repo = os.path.join(tmp, "gguf")
    os.makedirs(gguf_repo)
    for quant in ("f32", "q8_0"):
        out = os.path.join(gguf_repo, f"tiny-{quant}.gguf")
        r = subprocess.run([g4, "make-model", "--preset", "tiny", "--seed", "3", "--format",
                            "gguf", "--quant", quant, "--out", out], capture_output=True, text=True)
        check(r.returncode == 0, f"make-model --format gguf: {r.stderr}")

    log = os.path.join(tmp, "hub.log")
    hub = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_hub.py"), "--log", log,
                            "--token", "secret", "--repo", f"org/tiny={model}",
                            "--repo", f"org/gated={model},gated",
                            "--repo", f"org/flaky={model},flaky",
                            "--repo", f"org/corrupt={model},corrupt",
                            "--repo", f"org/slow={model},slow",
                            "--repo", f"org/tiny-GGUF={gguf_repo}"],
                           stdout=subprocess.PIPE, text=True)
    procs.append(hub)
    line = hub.stdout.readline()
    check(line.startswith("PORT "), f"fake hub did not start: {line!r}")
    endpoint = f"http://127.0.0.1:{line.split()[1]}"

    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    base.update(HF_HOME=os.path.join(tmp, "hf_home"), HF_ENDPOINT=endpoint,
                HF_HUB_DISABLE_TELEMETRY="1")

    def env(cache, **extra):
        return dict(base, HF_HUB_CACHE=os.path.join(tmp, cache), **extra)

    def offline(cache):  # no hub reachable at all: port 9 (discard) on loopback
        return env(cache, HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")

    def g4_run(args, e):
        return subprocess.run([g4] + args, capture_output=True, text=True, env=e, timeout=120)

    def requests():
        with open(log) as f:
            return f.read().splitlines()

    def logits(model_arg, e, name, extra=()):
        out = os.path.join(tmp, name)
        r = g4_run(["logits", "--model", model_arg, "--ids", "2,17,33", "--out", out] +
                   list(extra), e)
        check(r.returncode == 0, f"logits --model {model_arg}: {r.stderr}")
        with open(out, "rb") as f:
            return f.read(), r.stderr

    expected, _ = logits(model, base, "local.f32")
    sha = hashlib.sha256(open(os.path.join(model, "model.safetensors"), "rb").read()).hexdigest()

    # g4 pull, then huggingface_hub finds everything offline.
    r = g4_run(["pull", "org/tiny"], env("c1"))
    check(r.returncode == 0, f"pull org/tiny: {r.stderr}")
    snapshot = r.stdout.strip().splitlines()[-1]
    repo_dir = os.path.join(tmp, "c1", "models--org--tiny")
    commit = open(os.path.join(repo_dir, "refs", "main")).read()
    check(snapshot == os.path.join(repo_dir, "snapshots", commit), f"snapshot {snapshot}")
    check(os.readlink(os.path.join(snapshot, "model.safetensors")) == f"../../blobs/{sha}",
          "model.safetensors is not a relative link to blobs/<sha256>")
    check(os.readlink(os.path.join(snapshot, "extra", "notes.txt")).startswith("../../../blobs/"),
          "extra/notes.txt link")
    hf = subprocess.run(
        [sys.executable, "-c",
         "import sys; from huggingface_hub import snapshot_download, hf_hub_download\n"
         "print(snapshot_download('org/tiny'))\n"
         "for f in sys.argv[1:]: print(hf_hub_download('org/tiny', f))"] + files,
        capture_output=True, text=True, env=offline("c1"))
    check(hf.returncode == 0, f"huggingface_hub offline after g4 pull: {hf.stderr[-2000:]}")
    paths = hf.stdout.split()
    check(paths[0] == snapshot, f"snapshot_download: {paths[0]} != {snapshot}")
    for f, p in zip(files, paths[1:]):
        check(open(p, "rb").read() == open(os.path.join(model, f), "rb").read(),
              f"{f}: huggingface_hub reads other bytes")
    n = len(requests())
    got, err = logits("org/tiny", offline("c1"), "c1.f32")
    check(got == expected, "logits of --model org/tiny (g4 pull) differ from the local ones")
    check(f"model org/tiny: {snapshot}" in err, f"resolved path not logged: {err}")
    check(len(requests()) == n, "--model org/tiny made a request")

    # Pulled again: nothing downloaded. A tag: refs/v1.
    r = g4_run(["pull", "org/tiny", "--revision", "v1"], env("c1"))
    check(r.returncode == 0 and "0 files downloaded" in r.stderr, f"second pull: {r.stderr}")
    check(open(os.path.join(repo_dir, "refs", "v1")).read() == commit, "refs/v1")
    got, _ = logits("org/tiny", offline("c1"), "c1v1.f32", ["--revision", "v1"])
    check(got == expected, "--revision v1")
    got, _ = logits("org/tiny", offline("c1"), "c1c.f32", ["--revision", commit])
    check(got == expected, "--revision <commit>")

    # huggingface_hub downloads; g4 runs from its cache offline.
    hf = subprocess.run([sys.executable, "-c",
                         "from huggingface_hub import snapshot_download\n"
                         "print(snapshot_download('org/tiny'))"],
                        capture_output=True, text=True, env=env("c2"))
    check(hf.returncode == 0, f"huggingface_hub download: {hf.stderr[-2000:]}")
    got, err = logits("org/tiny", offline("c2"), "c2.f32")
    check(got == expected, "logits from huggingface_hub's cache differ")
    check(hf.stdout.strip() in err, f"not huggingface_hub's snapshot: {err}")

    # GGUF: several files need :FILE.gguf; --include fetches one.
    r = g4_run(["pull", "org/tiny-GGUF", "--include", "*q8_0.gguf", "--quiet"], env("c9"))
    check(r.returncode == 0 and os.listdir(r.stdout.strip()) == ["tiny-q8_0.gguf"],
          f"pull --include '*q8_0.gguf': {r.stderr}")
    gguf_local, _ = logits(os.path.join(gguf_repo, "tiny-q8_0.gguf"), base, "gguf_local.f32")
    got, _ = logits("org/tiny-GGUF", offline("c9"), "gguf_one.f32")  # the only .gguf there
    check(got == gguf_local, "logits of the only .gguf differ")
    r = g4_run(["pull", "org/tiny-GGUF", "--quiet"], env("c9"))
    check(r.returncode == 0, f"pull org/tiny-GGUF: {r.stderr}")
    r = g4_run(["logits", "--model", "org/tiny-GGUF", "--ids", "2"], offline("c9"))
    check(r.returncode == 1 and "tiny-f32.gguf, tiny-q8_0.gguf" in r.stderr and
          "org/tiny-GGUF:FILE.gguf" in r.stderr, f"several .gguf: {r.stderr}")
    got, _ = logits("org/tiny-GGUF:tiny-q8_0.gguf", offline("c9"), "gguf_pick.f32")
    check(got == gguf_local, "logits of org/tiny-GGUF:tiny-q8_0.gguf differ")

    # --include: only what matches.
    r = g4_run(["pull", "org/tiny", "--include", "*.json", "extra/", "--quiet"], env("c3"))
    check(r.returncode == 0, f"pull --include: {r.stderr}")
    snap3 = r.stdout.strip()
    got_files = sorted(os.path.relpath(os.path.join(d, n), snap3)
                       for d, _, ns in os.walk(snap3) for n in ns)
    want = [f for f in files if f.endswith(".json") or f.startswith("extra/")]
    check(got_files == want, f"--include: {got_files}, not {want}")

    # A download cut half way: kept as .incomplete, resumed with Range.
    blob = os.path.join(tmp, "c4", "models--org--flaky", "blobs", sha)
    r = g4_run(["pull", "org/flaky"], env("c4"))
    check(r.returncode == 1 and "org/flaky/model.safetensors" in r.stderr and
          "resume" in r.stderr, f"cut download: {r.returncode} {r.stderr}")
    part = os.path.getsize(blob + ".incomplete")
    size = os.path.getsize(os.path.join(model, "model.safetensors"))
    check(0 < part < size, f".incomplete has {part} of {size} bytes")
    r = g4_run(["pull", "org/flaky"], env("c4"))
    check(r.returncode == 0, f"resumed pull: {r.stderr}")
    check(f"GET /_lfs/org/flaky/{sha} bytes={part}- -" in requests(), "no Range request on resume")
    check(not os.path.exists(blob + ".incomplete") and
          hashlib.sha256(open(blob, "rb").read()).hexdigest() == sha, "resumed blob")

    # huggingface_hub's own lock on the blob (filelock on .locks/<repo>/<etag>.lock) makes g4
    # wait until it is released.
    from filelock import FileLock
    lock = FileLock(os.path.join(tmp, "c10", ".locks", "models--org--tiny", f"{sha}.lock"))
    lock.acquire()
    err_path = os.path.join(tmp, "locked.err")
    with open(err_path, "w") as err_file:
        p = subprocess.Popen([g4, "pull", "org/tiny"], stdout=subprocess.DEVNULL, stderr=err_file,
                             env=env("c10"))
        procs.append(p)
        for _ in range(200):
            if "waiting for another download" in open(err_path).read() or p.poll() is not None:
                break
            time.sleep(0.05)
        check(p.poll() is None, f"g4 pull did not wait for the lock: {open(err_path).read()}")
        lock.release()
        check(p.wait(timeout=60) == 0, f"pull after the lock: {open(err_path).read()}")

    # Wrong bytes: refused, nothing left behind.
    r = g4_run(["pull", "org/corrupt"], env("c5"))
    check(r.returncode == 1 and "org/corrupt/model.safetensors: sha256 mismatch" in r.stderr,
          f"corrupt: {r.stderr}")
    blobs5 = os.path.join(tmp, "c5", "models--org--corrupt", "blobs")
    check(not any(f.startswith(sha) for f in os.listdir(blobs5)), "corrupt blob kept")

    # 404, 401 / HF_TOKEN, offline, unreachable.
    r = g4_run(["pull", "org/missing"], env("c6"))
    check(r.returncode == 1 and "org/missing: repository not found" in r.stderr, r.stderr)
    r = g4_run(["pull", "org/gated"], env("c6"))
    check(r.returncode == 1 and "org/gated: access denied" in r.stderr and
          "HF_TOKEN" in r.stderr, r.stderr)
    r = g4_run(["pull", "org/tiny", "--revision", "nope"], env("c6"))
    check(r.returncode == 1 and "revision 'nope' not found" in r.stderr, r.stderr)
    r = g4_run(["pull", "org/gated", "--quiet"], env("c6", HF_TOKEN="secret"))
    check(r.returncode == 0, f"gated with HF_TOKEN: {r.stderr}")
    check(all("Bearer" not in q for q in requests() if q.startswith("GET /_lfs/")),
          "the token was sent to the CDN host")
    n = len(requests())
    r = g4_run(["pull", "org/tiny"], env("c7", HF_HUB_OFFLINE="1"))
    check(r.returncode == 1 and "HF_HUB_OFFLINE" in r.stderr and len(requests()) == n,
          f"offline pull: {r.stderr}")
    r = g4_run(["pull", "org/tiny"], env("c7", HF_ENDPOINT="http://127.0.0.1:9"))
    check(r.returncode == 1 and "org/tiny" in r.stderr and "network error" in r.stderr,
          f"unreachable hub: {r.stderr}")

    # Progress: the LFS file comes in 8 pieces 0.25 s apart (2 s): lines at most every 0.5 s.
    r = g4_run(["pull", "org/slow", "--include", "*.safetensors"], env("c8"))
    check(r.returncode == 0, f"slow pull: {r.stderr}")
    lines = [x for x in r.stderr.splitlines() if x.startswith("g4: model.safetensors  ")]
    check(2 <= len(lines) <= 6, f"{len(lines)} progress lines: {r.stderr}")
    check(all(re.search(r"/s  ETA \d+s$", x) for x in lines), f"progress lines: {lines}")
    check(re.search(r"100%", lines[-1]), f"last progress line: {lines[-1]}")

    # Misuse of --model.
    r = g4_run(["logits", "--model", os.path.join(model, "model.safetensors"), "--ids", "2"],
               base)
    check(r.returncode == 1 and "expected a checkpoint directory" in r.stderr and
          ".gguf file" in r.stderr, f".safetensors as --model: {r.stderr}")
    for cmd in (["logits", "--ids", "2"], ["tokenize", "--text", "hi"]):
        r = g4_run(cmd + ["--model", "org/absent"], offline("c1"))
        check(r.returncode == 1 and "g4 pull org/absent" in r.stderr, f"not cached: {r.stderr}")


if __name__ == "__main__":
    sys.exit(main())
