// End-to-end tests of `g4 serve` with the official openai npm client (v6) and plain fetch:
// a tiny random-weight checkpoint with the real Gemma vocabulary, made at test time.
// Run by ctest (see CMakeLists.txt) as: node --test tests/server/e2e/server.test.mjs
// with G4_BIN pointing at the g4 binary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const here = dirname(fileURLToPath(import.meta.url));
const G4 = process.env.G4_BIN;
const TOKENIZER = join(here, '..', '..', 'node_modules', '@lenml', 'tokenizer-gemma3', 'models',
                       'tokenizer.json');
const CTX = 4096;

let dir, server, base, client;

// Starts `g4 serve` on a free port; resolves once /health says ready.
async function startServer(extraArgs = []) {
  const args = ['serve', '--model', join(dir, 'model'), '--port', '0', '--max-batch', '4',
                '--max-waiting', '16', '--served-model-name', 'tiny', ...extraArgs];
  if (!extraArgs.includes('--ctx-size')) args.push('--ctx-size', String(CTX));
  const proc = spawn(G4, args,
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 60000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => reject(new Error(`server exited ${code}:\n${log}`)));
  });
  for (let i = 0; i < 600; ++i) {
    const r = await fetch(url + '/health').catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, url, log: () => log };
}

async function stopServer(s) {
  const exited = new Promise((resolve) => s.proc.on('exit', (code) => resolve(code)));
  s.proc.kill('SIGTERM');
  return exited;
}

async function metric(name) {
  const text = await (await fetch(base + '/metrics')).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + '{') || line.startsWith(name + ' ')) total += Number(line.split(' ').pop());
  }
  return total;
}

async function post(path, body, headers = {}) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

before(async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  assert.ok(existsSync(TOKENIZER), `tokenizer missing: ${TOKENIZER} (run scripts/setup.sh)`);
  dir = mkdtempSync(join(tmpdir(), 'g4-e2e-'));
  execFileSync(G4, ['make-model', '--preset', 'tiny', '--dtype', 'bf16', '--seed', '7', '--out',
                    join(dir, 'model'), '--tokenizer', TOKENIZER], { stdio: 'ignore' });
  server = await startServer();
  base = server.url;
  client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  if (server) {
    const code = await stopServer(server);
    assert.equal(code, 0, 'SIGTERM must end the server with exit code 0');
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('first log line is the device policy; health and models', async () => {
  assert.match(server.log().split('\n')[0], /^g4: device policy: backend=cpu /);
  const h = await fetch(base + '/health');
  assert.equal(h.status, 200);
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'tiny');
  assert.equal(models.data[0].max_model_len, CTX);
});

test('chat completion, non-streaming: shape, usage, verdict', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 6, temperature: 0,
  });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.g4.degenerate, 'boolean');
});

test('completion: max_tokens -> finish_reason length, default 16', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: 'The capital of France is',
                                              max_tokens: 5, temperature: 0, ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 5);
  const d = await client.completions.create({ model: 'tiny', prompt: 'Hi', temperature: 0,
                                              ignore_eos: true });
  assert.equal(d.usage.completion_tokens, 16);
});

test('streaming chat: role first, one id, usage chunk, [DONE]; text equals non-streaming', async () => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Count to three.' }],
                max_tokens: 12, temperature: 0, ignore_eos: true };
  const whole = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true,
                                                        stream_options: { include_usage: true } });
  const ids = new Set();
  let text = '', sawRole = false, finish = null, usage = null, n = 0;
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    const c = chunk.choices[0];
    if (n++ === 0) { assert.equal(c.delta.role, 'assistant'); sawRole = true; } else {
      assert.equal(c.delta.role, undefined);
    }
    if (c.delta.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.ok(sawRole);
  assert.equal(ids.size, 1);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 12);
  assertSameUsage(usage, whole.usage);
  assert.equal(text, whole.choices[0].message.content);
});

// The streamed usage chunk counts what the non-streamed answer to the same request counts.
function assertSameUsage(streamed, whole) {
  assert.ok(whole.prompt_tokens > 0);
  assert.equal(whole.total_tokens, whole.prompt_tokens + whole.completion_tokens);
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
    assert.equal(streamed[k], whole[k], `streamed usage.${k}`);
  }
}

test('streaming completion: the usage chunk equals the non-streamed usage', async () => {
  const req = { model: 'tiny', prompt: 'Count the sheep:', max_tokens: 9, temperature: 0,
                ignore_eos: true };
  const whole = await client.completions.create(req);
  const stream = await client.completions.create({ ...req, stream: true,
                                                   stream_options: { include_usage: true } });
  let usage = null, text = '';
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices[0]?.text ?? '';
  }
  assert.ok(usage, 'no usage chunk');
  assert.equal(usage.completion_tokens, 9);
  assertSameUsage(usage, whole.usage);
  assert.equal(text, whole.choices[0].text);
});

// Logprob values, not just their presence: a greedy request made twice gives the same values;
// each token's alternatives are sorted best first; the chosen token's logprob is <= 0 and, under
// greedy, the first alternative's; and the alternatives' probabilities sum to at most 1 (a
// logprob that is x - max instead of x - log Z puts the best at 0 and the sum above 1).
function checkAlternatives(chosen, alts, where) {
  assert.ok(chosen <= 0, `${where}: logprob ${chosen} > 0`);
  assert.ok(alts.length > 1, `${where}: too few alternatives`);
  for (let i = 1; i < alts.length; ++i) {
    assert.ok(alts[i - 1] >= alts[i], `${where}: alternatives not sorted: ${alts}`);
  }
  assert.equal(chosen, alts[0], `${where}: greedy token is not the best alternative`);
  const mass = alts.reduce((sum, lp) => sum + Math.exp(lp), 0);
  assert.ok(mass <= 1 + 1e-5, `${where}: alternatives' probabilities sum to ${mass}`);
}

test('chat logprobs: reproducible, sorted, greedy token first, a distribution', async () => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Name a colour.' }],
                max_tokens: 8, temperature: 0, ignore_eos: true, logprobs: true,
                top_logprobs: 5 };
  const a = (await client.chat.completions.create(req)).choices[0].logprobs.content;
  const b = (await client.chat.completions.create(req)).choices[0].logprobs.content;
  assert.equal(a.length, 8);
  assert.deepEqual(a, b);
  a.forEach((t, i) => {
    assert.equal(t.top_logprobs.length, 5);
    assert.equal(t.token, t.top_logprobs[0].token);
    checkAlternatives(t.logprob, t.top_logprobs.map((x) => x.logprob), `token ${i}`);
  });
});

test('completion logprobs: reproducible, sorted, greedy token first, a distribution', async () => {
  const req = { model: 'tiny', prompt: 'The weather today', max_tokens: 8, temperature: 0,
                ignore_eos: true, logprobs: 5 };
  const a = (await client.completions.create(req)).choices[0].logprobs;
  const b = (await client.completions.create(req)).choices[0].logprobs;
  assert.equal(a.token_logprobs.length, 8);
  assert.deepEqual(a, b);
  a.token_logprobs.forEach((lp, i) => {
    // Alternatives are an object keyed by text (JS puts integer-like keys first, so the order
    // is checked on chat); two ids with one text merge, so at least 2 of the 5 remain.
    const alts = Object.values(a.top_logprobs[i]).sort((x, y) => y - x);
    checkAlternatives(lp, alts, `token ${i}`);
  });
});

test('stop strings end generation and are not emitted', async () => {
  const base_req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 24, temperature: 0,
                     ignore_eos: true };
  const full = (await client.completions.create(base_req)).choices[0].text;
  assert.ok(full.length > 8, 'need some text to cut');
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
  const cut = await client.completions.create({ ...base_req, stop: [stop] });
  assert.equal(cut.choices[0].finish_reason, 'stop');
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
  // Streaming the same request emits the same text.
  const s = await client.completions.create({ ...base_req, stop: [stop], stream: true });
  let streamed = '';
  for await (const chunk of s) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, cut.choices[0].text);
});

test('a seed makes sampling reproducible', async () => {
  const req = { model: 'tiny', prompt: 'Random:', max_tokens: 12, temperature: 1.0, top_k: 0,
                top_p: 1.0, seed: 1234, ignore_eos: true };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  const c = await client.completions.create({ ...req, seed: 99 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.notEqual(a.choices[0].text, c.choices[0].text);
});

test('prompt + max_tokens past the context is a 400 with the vLLM message', async () => {
  await assert.rejects(
    client.completions.create({ model: 'tiny', prompt: 'word '.repeat(5000), max_tokens: 8 }),
    (e) => e.status === 400 && /maximum context length is 4096 tokens/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }],
                                     max_tokens: 5000 }),
    (e) => e.status === 400 && /maximum context length/.test(e.message));
});

test('8 concurrent greedy streams each equal their output alone', async () => {
  const prompts = Array.from({ length: 8 }, (_, i) => `Story ${i}: ` + 'once '.repeat(i * 3));
  const req = (p) => ({ model: 'tiny', prompt: p, max_tokens: 10, temperature: 0, ignore_eos: true });
  const solo = [];
  for (const p of prompts) solo.push((await client.completions.create(req(p))).choices[0].text);
  const together = await Promise.all(prompts.map(async (p) => {
    const s = await client.completions.create({ ...req(p), stream: true });
    let t = '';
    for await (const chunk of s) t += chunk.choices[0]?.text ?? '';
    return t;
  }));
  assert.deepEqual(together, solo);
});

test('a client that disconnects mid-stream is cancelled and its slot freed', async () => {
  const aborts = await metric('vllm:request_success_total{model_name="tiny",finished_reason="abort"}');
  const controller = new AbortController();
  const s = await client.completions.create(
    { model: 'tiny', prompt: 'Go on forever', max_tokens: 4000, temperature: 0, ignore_eos: true,
      stream: true }, { signal: controller.signal });
  let n = 0;
  try {  // openai v6 ends the iteration quietly on abort; other versions throw
    for await (const _ of s) { if (++n === 2) controller.abort(); }
  } catch (e) {
    assert.equal(e.name, 'APIUserAbortError');
  }
  // Chunks already received with the second may still be yielded after the abort.
  assert.ok(n >= 2 && n < 50, `the stream was still running when the client went away (${n} chunks)`);
  let running = 1;
  for (let i = 0; i < 100 && running > 0; ++i) {
    await new Promise((r) => setTimeout(r, 50));
    running = await metric('vllm:num_requests_running');
  }
  assert.equal(running, 0, 'the slot must be freed');
  assert.ok(await metric('vllm:request_success_total{model_name="tiny",finished_reason="abort"}') > aborts);
});

test('/metrics parses: every line a comment or a sample, histograms consistent', async () => {
  const r = await fetch(base + '/metrics');
  assert.match(r.headers.get('content-type'), /text\/plain/);
  const text = await r.text();
  for (const line of text.trim().split('\n')) {
    assert.match(line, /^(# (HELP|TYPE) .+|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+Inf-]+|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? NaN)$/, line);
  }
  for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting',
                      'vllm:prompt_tokens_total', 'vllm:generation_tokens_total',
                      'vllm:time_to_first_token_seconds_count', 'vllm:inter_token_latency_seconds_count',
                      'vllm:e2e_request_latency_seconds_count', 'g4:decode_tokens_per_second',
                      'g4:degenerate_responses_total']) {
    assert.ok(text.includes(name), `missing ${name}`);
  }
  assert.ok(await metric('vllm:generation_tokens_total') > 0);
  // The CPU backend records no graphs: every decode step (warm-up's included) ran op by op.
  assert.ok(await metric('g4:decode_steps_total{model_name="tiny",mode="op_by_op"}') > 0);
  assert.equal(await metric('g4:decode_steps_total{model_name="tiny",mode="graph_replayed"}'), 0);
});

test('tokenize and detokenize round-trip', async () => {
  const t = await post('/tokenize', { prompt: 'Hello world!' });
  assert.equal(t.status, 200);
  assert.deepEqual(t.body.tokens, [2, 9259, 1902, 236888]);
  const d = await post('/detokenize', { tokens: t.body.tokens.slice(1) });
  assert.equal(d.body.prompt, 'Hello world!');
});

test('client errors are 4xx in the OpenAI shape', async () => {
  const cases = [
    ['{"messages": [', 400],
    [{ messages: [] }, 400],
    [{ messages: [{ role: 'wizard', content: 'x' }] }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], n: 17 }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], logit_bias: { '5': 101 } }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], logit_bias: { '999999': 1 } }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'a b' } }] }, 400],
    [{ messages: [{ role: 'user' }] }, 400],
    [{ messages: [{ role: 'user', content: 'x' }], model: 'gpt-9' }, 404],
  ];
  for (const [body, status] of cases) {
    const r = await post('/v1/chat/completions', body);
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(typeof r.body.error.message, 'string');
    assert.equal(r.body.error.code, status);
  }
  const nf = await fetch(base + '/v1/nothing');
  assert.equal(nf.status, 404);
  assert.match((await nf.json()).error.message, /no route GET \/v1\/nothing/);
  // An unknown model keeps its own message (the no-route handler sees a body and leaves it).
  const model = await post('/v1/chat/completions',
                           { messages: [{ role: 'user', content: 'x' }], model: 'gpt-9' });
  assert.equal(model.status, 404);
  assert.equal(model.body.error.message, 'The model `gpt-9` does not exist.');
  assert.equal(model.body.error.param, 'model');
  assert.equal(model.body.error.type, 'NotFoundError');
  const vocab = await post('/v1/completions', { prompt: 'x', logit_bias: { '999999': 1 } });
  assert.equal(vocab.body.error.param, 'logit_bias');
  assert.match(vocab.body.error.message, /token id 999999 is outside the vocabulary/);
});

test('a second g4 serve on a port g4 holds fails to bind, naming the address', async () => {
  const { port } = new URL(base);
  const proc = spawn(G4, ['serve', '--model', join(dir, 'model'), '--port', port],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  // Either it exits, or it says it listens (shares the port): then it is stopped and fails.
  const listening = new Promise((resolve) => proc.stderr.on('data', (d) => {
    log += d;
    if (/listening on/.test(log)) resolve('listening');
  }));
  const exited = new Promise((resolve) => proc.on('exit', (c) => resolve(c)));
  const first = await Promise.race([listening, exited]);
  if (first === 'listening') {
    proc.kill('SIGKILL');
    assert.fail(`a second server started on port ${port}:\n${log}`);
  }
  assert.notEqual(first, 0, log);
  assert.match(log, new RegExp(`cannot bind 127\\.0\\.0\\.1:${port}`));
  assert.equal((await fetch(base + '/health')).status, 200);
});

test('n choices: indices 0..n-1, independent samples, usage counts the prompt once', async () => {
  const req = { model: 'tiny', prompt: 'Random:', max_tokens: 6, temperature: 1.0, top_k: 0,
                ignore_eos: true, seed: 5 };
  const one = await client.completions.create(req);
  const r = await client.completions.create({ ...req, n: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(new Set(r.choices.map((c) => c.text)).size, 3, 'three samples, not one thrice');
  assert.equal(r.choices[0].text, one.choices[0].text, 'choice 0 draws with the seed itself');
  assert.equal(r.usage.prompt_tokens, one.usage.prompt_tokens);
  assert.equal(r.usage.completion_tokens, 18);
  assert.equal(r.g4.choices.length, 3);
  // Greedy: n identical answers (what OpenAI and vLLM give).
  const g = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0,
    ignore_eos: true, n: 2 });
  assert.equal(g.choices.length, 2);
  assert.equal(g.choices[0].message.content, g.choices[1].message.content);
  assert.equal(g.usage.completion_tokens, 10);
});

test('n choices streamed: each index has its role, text and finish; equal to non-streamed', async () => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Tell me' }], max_tokens: 7,
                temperature: 1.0, top_k: 0, ignore_eos: true, seed: 11, n: 3 };
  const whole = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true,
                                                        stream_options: { include_usage: true } });
  const text = ['', '', ''], roles = [0, 0, 0], finish = [null, null, null];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      assert.equal(finish[c.index], null, `choice ${c.index} went on after its finish`);
      if (c.delta.role) ++roles[c.index];
      text[c.index] += c.delta.content ?? '';
      if (c.finish_reason) {
        finish[c.index] = c.finish_reason;
        assert.equal(typeof chunk.g4.degenerate, 'boolean');
      }
    }
  }
  assert.deepEqual(roles, [1, 1, 1]);
  assert.deepEqual(finish, ['length', 'length', 'length']);
  assert.deepEqual(text, whole.choices.map((c) => c.message.content));
  assertSameUsage(usage, whole.usage);
  // Completions stream the same way.
  const cs = await client.completions.create({ model: 'tiny', prompt: 'Go', max_tokens: 4,
                                               temperature: 0, ignore_eos: true, n: 2,
                                               stream: true });
  const ctext = ['', ''];
  for await (const chunk of cs) for (const c of chunk.choices) ctext[c.index] += c.text;
  assert.ok(ctext[0].length > 0);
  assert.equal(ctext[0], ctext[1]);
});

// The id of one token's text (the tiny model's greedy picks are whole vocabulary pieces).
async function tokenId(text) {
  const t = await post('/tokenize', { prompt: text, add_special_tokens: false });
  assert.equal(t.body.tokens.length, 1, `"${text}" is not one token: ${t.body.tokens}`);
  return t.body.tokens[0];
}

test('logit_bias: +100 forces a token under greedy, -100 bans the greedy one', async () => {
  const req = { model: 'tiny', prompt: 'The capital of France is', max_tokens: 1,
                temperature: 0, ignore_eos: true };
  const first = (await client.completions.create(req)).choices[0].text;
  const greedy = await tokenId(first);
  const banned = await client.completions.create({ ...req, logit_bias: { [greedy]: -100 } });
  assert.notEqual(banned.choices[0].text, first);
  const paris = await tokenId(' Paris');
  const forced = await client.completions.create({ ...req, max_tokens: 3,
                                                   logit_bias: { [paris]: 100 } });
  assert.equal(forced.choices[0].text, ' Paris Paris Paris');
  // Chat too, streamed.
  const s = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 2, temperature: 0,
    ignore_eos: true, logit_bias: { [paris]: 100 }, stream: true });
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, ' Paris Paris');
});

test('stop_on_degenerate: a looping answer stops with finish_reason stop and the verdict', async () => {
  // A loop forced by logit_bias: one token over and over trips the run check well within 100.
  const req = { model: 'tiny', prompt: 'Once', max_tokens: 100, temperature: 0, ignore_eos: true,
                logit_bias: { [await tokenId(' Paris')]: 100 } };
  const loop = await client.completions.create(req);
  assert.equal(loop.g4.degenerate, true, 'the tiny model did not loop: nothing to stop');
  assert.equal(loop.choices[0].finish_reason, 'length');
  const cut = await client.completions.create({ ...req, stop_on_degenerate: true });
  assert.equal(cut.choices[0].finish_reason, 'stop');
  assert.equal(cut.g4.degenerate, true);
  assert.ok(cut.usage.completion_tokens < 100, `${cut.usage.completion_tokens} tokens`);
  assert.ok(loop.choices[0].text.startsWith(cut.choices[0].text));
  // The server's default: --stop-on-degenerate, which a request may turn off.
  const stopping = await startServer(['--stop-on-degenerate']);
  try {
    const post2 = (body) => fetch(stopping.url + '/v1/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    }).then((r) => r.json());
    const d = await post2(req);
    assert.equal(d.choices[0].finish_reason, 'stop');
    assert.equal(d.usage.completion_tokens, cut.usage.completion_tokens);
    const off = await post2({ ...req, stop_on_degenerate: false });
    assert.equal(off.usage.completion_tokens, 100);
    // Streamed: the finishing chunk says stop and carries the verdict.
    const r = await fetch(stopping.url + '/v1/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...req, stream: true }) });
    const events = (await r.text()).split('\n\n').filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    const last = events.find((e) => e.choices[0]?.finish_reason);
    assert.equal(last.choices[0].finish_reason, 'stop');
    assert.equal(last.g4.degenerate, true);
  } finally {
    assert.equal(await stopServer(stopping), 0);
  }
});

test('hundreds of malformed bodies: every answer a 4xx, server stays up', async () => {
  // Its own server with a small context: a mutation that drops max_tokens is still a valid
  // chat request, which then fills the whole context.
  const fuzz = await startServer(['--ctx-size', '64']);
  try {
    await fuzzBodies(fuzz.url);
  } finally {
    assert.equal(await stopServer(fuzz), 0);
  }
});

async function fuzzBodies(url) {
  const good = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const bodies = [];
  for (let i = 0; i < 300; ++i) {
    const chars = good.split('');
    const edits = 1 + Math.floor(rand() * 4);
    for (let e = 0; e < edits; ++e) {
      const at = Math.floor(rand() * chars.length);
      const op = rand();
      if (op < 0.4) chars.splice(at, 1);
      else if (op < 0.8) chars.splice(at, 0, String.fromCharCode(Math.floor(rand() * 128)));
      else chars[at] = '"';
    }
    bodies.push(chars.join(''));
  }
  bodies.push('', 'null', '[]', '"x"', '{"messages": {"role": "user"}}', '{"messages": [1, 2]}',
              '{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
              '{"messages": [{"role": "user", "content": "x"}], "max_tokens": -5}',
              '{"messages": [{"role": "user", "content": "x"}], "stream_options": {}}',
              '{' + '"a":{'.repeat(2000) + '}'.repeat(2001));
  for (const b of bodies) {
    const r = await fetch(url + '/v1/chat/completions',
                          { method: 'POST', headers: { 'content-type': 'application/json' }, body: b });
    const text = await r.text();
    if (r.status === 200) continue;  // a mutation that is still a valid request
    assert.ok(r.status >= 400 && r.status < 500, `status ${r.status} for ${b}: ${text}`);
    assert.ok(JSON.parse(text).error, text);
  }
  assert.equal((await fetch(url + '/health')).status, 200);
}

test('api key: 401 without the bearer token; health stays open', async () => {
  const keyed = await startServer(['--api-key', 'sekrit']);
  try {
    const noKey = await fetch(keyed.url + '/v1/models');
    assert.equal(noKey.status, 401);
    assert.equal((await noKey.json()).error.code, 401);
    const ok = await fetch(keyed.url + '/v1/models', { headers: { Authorization: 'Bearer sekrit' } });
    assert.equal(ok.status, 200);
    assert.equal((await fetch(keyed.url + '/health')).status, 200);
  } finally {
    assert.equal(await stopServer(keyed), 0);
  }
});
