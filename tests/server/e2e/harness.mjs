// Shared by the server e2e tests and benchmarks/e2e/server_load.mjs: make the tiny checkpoint,
// start and stop `g4 serve`, read /metrics and the server's memory, stream over raw SSE.
// Everything is loopback only.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const TOKENIZER = join(here, '..', '..', 'node_modules', '@lenml', 'tokenizer-gemma3',
                              'models', 'tokenizer.json');

// A tiny random-weight checkpoint with the real Gemma vocabulary in a new temp dir.
export function makeTinyModel(g4) {
  if (!existsSync(TOKENIZER)) throw new Error(`tokenizer missing: ${TOKENIZER} (run scripts/setup.sh)`);
  const dir = mkdtempSync(join(tmpdir(), 'g4-e2e-'));
  execFileSync(g4, ['make-model', '--preset', 'tiny', '--dtype', 'bf16', '--seed', '7', '--out',
                    join(dir, 'model'), '--tokenizer', TOKENIZER], { stdio: 'ignore' });
  return dir;
}

// Starts `g4 serve` on a free loopback port; resolves once /health says ready.
export async function startServer(g4, modelDir, extraArgs = []) {
  const args = ['serve', '--model', modelDir, '--host', '127.0.0.1', '--port', '0',
                '--served-model-name', 'tiny', ...extraArgs];
  const proc = spawn(g4, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 120000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then((code) => reject(new Error(`server exited ${code}:\n${log}`)));
  });
  for (let i = 0; i < 2400; ++i) {
    const r = await fetch(url + '/health').catch(() => null);
    if (r && r.status === 200) break;
    await sleep(50);
  }
  const { port } = new URL(url);
  return { proc, url, port: Number(port), exited, log: () => log };
}

// SIGTERM; resolves with the exit code.
export async function stopServer(s) {
  s.proc.kill('SIGTERM');
  return s.exited;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The sum of a metric's samples (all label sets), from /metrics.
export async function metric(url, name) {
  const text = await (await fetch(url + '/metrics')).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + '{') || line.startsWith(name + ' ')) total += Number(line.split(' ').pop());
  }
  return total;
}

// Polls until metric `name` equals `want` (or the time runs out); returns the last value.
export async function waitMetric(url, name, want, timeoutMs = 10000) {
  // `want`: a value to wait for, or a predicate (a gauge may jump past any one value).
  const reached = typeof want === 'function' ? want : (v) => v === want;
  const end = Date.now() + timeoutMs;
  let v;
  for (;;) {
    v = await metric(url, name);
    if (reached(v) || Date.now() > end) return v;
    await sleep(50);
  }
}

// Resident memory of a process from /proc/PID/status: VmRSS and the peak VmHWM, in KiB.
export function memoryKiB(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text) ?? [0, 0])[1]);
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}

// One streaming completion over fetch, parsing SSE by hand so each token's arrival is timed.
// Resolves { status, text, tokens (text chunks), ttftMs, gapsMs, done, error, finishReason, headers }
// (status 503: refused).
export async function streamCompletion(url, body, { signal } = {}) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }), signal,
  });
  const out = { status: r.status, text: '', tokens: 0, ttftMs: null, gapsMs: [], done: false, error: null,
                finishReason: null, headers: r.headers };
  if (r.status !== 200) {
    out.error = await r.text();
    return out;
  }
  const decoder = new TextDecoder();
  let buf = '', last = null;
  for await (const bytes of r.body) {
    buf += decoder.decode(bytes, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      if (!event.startsWith('data: ')) continue;
      const data = event.slice(6);
      if (data === '[DONE]') { out.done = true; continue; }
      const chunk = JSON.parse(data);
      if (chunk.error) { out.error = chunk.error.message; continue; }
      const c = chunk.choices?.[0];
      if (c?.finish_reason) out.finishReason = c.finish_reason;
      if (!c || c.finish_reason) continue;
      const now = performance.now();
      if (last === null) out.ttftMs = now - t0; else out.gapsMs.push(now - last);
      last = now;
      out.text += c.text ?? '';
      ++out.tokens;
    }
  }
  return out;
}

export function percentile(values, p) {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// `clients` concurrent streaming clients, each sending greedy completions of prompts[i % K]
// back to back until `maxServed` were served, `maxSent` sent (refusals included) or
// `durationMs` passed. A 503 counts as refused (the client waits `backoffMs` and goes on). Every served output is compared with
// refs[prompt] (greedy: it must equal the output the prompt gets alone).
export async function runLoad({ url, clients, durationMs, maxServed, maxSent = maxServed * 20,
                                maxTokens, prompts, refs, backoffMs = 100, onSample }) {
  const stats = { sent: 0, served: 0, refused: 0, failed: 0, corrupted: 0, ttftMs: [], itlMs: [],
                  errors: [] };
  const deadline = Date.now() + durationMs;
  let next = 0;
  const client = async () => {
    while (Date.now() < deadline && stats.served < maxServed && stats.sent < maxSent) {
      const i = next++ % prompts.length;
      ++stats.sent;
      let r;
      try {
        r = await streamCompletion(url, { model: 'tiny', prompt: prompts[i], max_tokens: maxTokens,
                                          temperature: 0, ignore_eos: true });
      } catch (e) {
        ++stats.failed;
        stats.errors.push(String(e));
        continue;
      }
      if (r.status === 503) {
        ++stats.refused;
        await sleep(backoffMs);
        continue;
      }
      if (r.status !== 200 || !r.done || r.error) {
        ++stats.failed;
        stats.errors.push(`status ${r.status}: ${r.error ?? 'no [DONE]'}`);
        continue;
      }
      ++stats.served;
      if (refs && r.text !== refs[i]) {
        ++stats.corrupted;
        stats.errors.push(`prompt ${i}: got ${JSON.stringify(r.text)}, alone ${JSON.stringify(refs[i])}`);
      }
      if (r.ttftMs !== null) stats.ttftMs.push(r.ttftMs);
      stats.itlMs.push(...r.gapsMs);
    }
  };
  const sampler = onSample ? setInterval(onSample, 100) : null;
  try {
    await Promise.all(Array.from({ length: clients }, client));
  } finally {
    if (sampler) clearInterval(sampler);
  }
  return stats;
}

// The greedy output of each prompt sent alone.
export async function soloOutputs(url, prompts, maxTokens) {
  const refs = [];
  for (const p of prompts) {
    const r = await streamCompletion(url, { model: 'tiny', prompt: p, max_tokens: maxTokens,
                                            temperature: 0, ignore_eos: true });
    if (r.status !== 200 || !r.done) throw new Error(`solo request failed: ${r.status} ${r.error}`);
    refs.push(r.text);
  }
  return refs;
}
