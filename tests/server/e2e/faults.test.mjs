// Fault tests of `g4 serve`: clients that vanish mid-prompt and mid-stream (slot and KV blocks
// freed, visible in /metrics), a reader that stalls (other streams keep going; it still gets
// everything once it reads), silent or partial requests (answered 408 after --read-timeout while
// others are served), a request trickled byte by byte (408 at --request-timeout), an oversized body (413), invalid UTF-8 (400 naming the field), absurd
// nesting (400, no crash), and SIGTERM under load (streams end cleanly, exit 0).
// Raw sockets (node:net) stand in for misbehaving clients.
// Run by ctest as: node --test tests/server/e2e/faults.test.mjs (env G4_BIN).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeTinyModel, startServer, stopServer, metric, waitMetric, sleep,
         streamCompletion } from './harness.mjs';

const G4 = process.env.G4_BIN;
const READ_TIMEOUT_S = 2;
const REQUEST_TIMEOUT_S = 4;
let dir, server, url;

before(async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  dir = makeTinyModel(G4);
  server = await startServer(G4, join(dir, 'model'),
                             ['--max-batch', '4', '--max-waiting', '8', '--ctx-size', '4096',
                              '--prefill-budget', '32', '--read-timeout', String(READ_TIMEOUT_S),
                              '--request-timeout', String(REQUEST_TIMEOUT_S)]);
  url = server.url;
});

after(async () => {
  if (server) assert.equal(await stopServer(server), 0, 'SIGTERM must end the server with exit 0');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A raw HTTP/1.1 connection: send what you like, collect what comes back.
function rawConnect() {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, '127.0.0.1', () => resolve(sock));
    sock.on('error', reject);
    sock.received = '';
    sock.isGone = false;
    sock.gone = new Promise((r) => sock.on('close', () => { sock.isGone = true; r(); }));
    sock.on('data', (d) => { sock.received += d; });
  });
}

function postHead(path, length) {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
         `Content-Length: ${length}\r\n\r\n`;
}

function rawPost(sock, path, body) {
  sock.write(postHead(path, Buffer.byteLength(body)) + body);
}

async function expectAllFreed(what) {
  assert.equal(await waitMetric(url, 'vllm:num_requests_running', 0), 0, `${what}: slot not freed`);
  assert.equal(await waitMetric(url, 'vllm:num_requests_waiting', 0), 0, `${what}: still queued`);
  assert.equal(await waitMetric(url, 'g4:kv_cache_blocks_in_use', 0), 0, `${what}: KV blocks held`);
  assert.equal(await waitMetric(url, 'g4:kv_cache_bytes_in_use', 0), 0, `${what}: KV bytes held`);
}

const abortCount = () =>
  metric(url, 'vllm:request_success_total{model_name="tiny",finished_reason="abort"}');

test('a client that disconnects mid-prompt is cancelled; slot and KV blocks freed', async () => {
  const aborts = await abortCount();
  const sock = await rawConnect();
  // ~3000 prompt tokens at 32 per step: the prefill takes many steps.
  rawPost(sock, '/v1/completions', JSON.stringify({ model: 'tiny', prompt: 'lorem ipsum '.repeat(1500),
                                                    max_tokens: 50, stream: true }));
  assert.equal(await waitMetric(url, 'vllm:num_requests_running', 1), 1, 'the request never ran');
  assert.ok(await waitMetric(url, 'g4:kv_cache_blocks_in_use', (v) => v >= 1) >= 1,
            'no KV block in use while prefilling');
  assert.ok(!/data: \{.*"text":"[^"]/.test(sock.received), 'a token arrived before the disconnect');
  sock.destroy();
  await expectAllFreed('mid-prompt disconnect');
  assert.ok(await abortCount() > aborts, 'not counted as aborted');
});

test('a client that disconnects mid-stream is cancelled; slot and KV blocks freed', async () => {
  const aborts = await abortCount();
  const sock = await rawConnect();
  rawPost(sock, '/v1/completions', JSON.stringify({ model: 'tiny', prompt: 'Go on', max_tokens: 3000,
                                                    ignore_eos: true, stream: true }));
  for (let i = 0; i < 400 && (sock.received.match(/data: /g) ?? []).length < 3; ++i) await sleep(25);
  assert.ok((sock.received.match(/data: /g) ?? []).length >= 3, 'the stream never started');
  sock.destroy();
  await expectAllFreed('mid-stream disconnect');
  assert.ok(await abortCount() > aborts);
});

test('a stalled reader does not stall other streams, and gets its whole stream later', async () => {
  // Big chunks (20 logprobs each) so the stalled stream overflows the socket buffers and its
  // HTTP thread blocks in a write.
  const slow = await rawConnect();
  slow.pause();
  const SLOW_TOKENS = 600;
  rawPost(slow, '/v1/completions', JSON.stringify({ model: 'tiny', prompt: 'Slow reader', max_tokens: SLOW_TOKENS,
                                                    ignore_eos: true, stream: true, logprobs: 20,
                                                    temperature: 0 }));
  await waitMetric(url, 'vllm:num_requests_running', 1);
  const t0 = Date.now();
  const others = await Promise.all([0, 1].map((i) => streamCompletion(
      url, { model: 'tiny', prompt: `Other ${i}`, max_tokens: 40, ignore_eos: true, temperature: 0 })));
  const othersMs = Date.now() - t0;
  for (const o of others) {
    assert.equal(o.status, 200);
    assert.ok(o.done);
    assert.equal(o.tokens, 40);
  }
  // The stalled client has read nothing yet; the others finished meanwhile.
  assert.equal(slow.received, '');
  console.log(`# two 40-token streams beside a stalled reader: ${othersMs} ms`);
  slow.resume();
  await Promise.race([slow.gone, new Promise((r) => {
    const iv = setInterval(() => { if (slow.received.includes('data: [DONE]')) { clearInterval(iv); r(); } }, 20);
  })]);
  const events = slow.received.split('\n\n').filter((e) => e.includes('"logprobs":{'));
  assert.equal(events.length, SLOW_TOKENS, 'the stalled reader lost chunks');
  assert.ok(slow.received.includes('data: [DONE]'));
  slow.destroy();
  await expectAllFreed('stalled reader');
});

test('silent and partial requests are dropped after the read timeout; others are served', async () => {
  // A crowd of connections that never send a byte: each first waits out the keep-alive
  // timeout (5 s), then the read timeout, holding an HTTP thread all along.
  const idle = [];
  for (let i = 0; i < 40; ++i) idle.push(await rawConnect());
  const t0 = Date.now();
  const silentHeaders = await rawConnect();
  silentHeaders.write('POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le');
  const partialBody = await rawConnect();
  partialBody.write(postHead('/v1/completions', 200) + '{"prompt": "x"');
  // Meanwhile the server answers others.
  const h = await fetch(url + '/health');
  assert.equal(h.status, 200);
  const r = await streamCompletion(url, { model: 'tiny', prompt: 'Hi', max_tokens: 4, ignore_eos: true });
  assert.equal(r.status, 200);
  assert.ok(r.done);
  const servedMs = Date.now() - t0;
  assert.ok(idle.every((s) => !s.isGone),
            `served after ${servedMs} ms, but only once the idle connections were dropped`);
  // After the read timeout a half-sent request is answered 408 and its connection closed.
  const answered = (sock) => sock.isGone || /^HTTP\/1\.1 408 /.test(sock.received);
  while (!(answered(silentHeaders) && answered(partialBody)) && Date.now() - t0 < 30000) await sleep(20);
  const elapsed = (Date.now() - t0) / 1000;
  assert.ok(elapsed >= READ_TIMEOUT_S - 0.5 && elapsed < READ_TIMEOUT_S + 4,
            `half-sent requests given up after ${elapsed} s, read timeout ${READ_TIMEOUT_S} s`);
  await Promise.all([silentHeaders.gone, partialBody.gone]);
  await Promise.all(idle.map((s) => s.gone));
  const idleS = (Date.now() - t0) / 1000;
  console.log(`# served beside 42 slow connections in ${servedMs} ms; half-sent requests answered 408 ` +
              `after ${elapsed.toFixed(1)} s, idle connections by ${idleS.toFixed(1)} s`);
  // Nothing half-read reached the engine.
  assert.equal(partialBody.received.includes('200 OK'), false);
  await expectAllFreed('slow requests');
});

test('a request trickled byte by byte is answered 408 at the request deadline', async () => {
  const sock = await rawConnect();
  const t0 = Date.now();
  sock.write('POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
  // One byte every 0.5 s: never silent for the read timeout, so only the deadline ends it.
  while (!sock.isGone && !sock.received && Date.now() - t0 < 30000) {
    sock.write('a');
    await sleep(500);
  }
  const elapsed = (Date.now() - t0) / 1000;
  assert.match(sock.received, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.match(sock.received, /"message":"The request did not arrive in time/);
  assert.ok(elapsed >= REQUEST_TIMEOUT_S - 0.5 && elapsed < 25,
            `trickled request cut after ${elapsed} s, request timeout ${REQUEST_TIMEOUT_S} s`);
  await sock.gone;
  console.log(`# trickled request answered 408 after ${elapsed.toFixed(1)} s`);
  await expectAllFreed('trickled request');
});

test('a body over the limit is a 413 in the OpenAI error shape', async () => {
  const big = JSON.stringify({ model: 'tiny', prompt: 'x'.repeat(33 << 20) });
  const r = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
                                                   body: big });
  assert.equal(r.status, 413);
  const e = (await r.json()).error;
  assert.equal(e.code, 413);
  assert.equal(typeof e.message, 'string');
  assert.equal((await fetch(url + '/health')).status, 200);
});

test('invalid UTF-8 inside a JSON string is a 400 naming the field', async () => {
  const cases = [
    [Buffer.concat([Buffer.from('{"model":"tiny","prompt":"ab'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
     '/v1/completions', 'prompt'],
    [Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"ok"},{"role":"user","content":"x'),
                    Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]),
     '/v1/chat/completions', 'messages[1].content'],
  ];
  for (const [body, path, param] of cases) {
    const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(r.status, 400);
    const e = (await r.json()).error;
    assert.equal(e.param, param);
    assert.match(e.message, new RegExp('UTF-8.*' + param.replace(/[[\].]/g, '\\$&')));
  }
});

test('deeply nested JSON is a 400, and the server stays up', async () => {
  for (const body of ['['.repeat(200000), '{"prompt":"x","y":' + '{"a":'.repeat(50000) + '1' + '}'.repeat(50001)]) {
    const r = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(r.status, 400);
    assert.match((await r.json()).error.message, /nested deeper/);
  }
  assert.equal((await fetch(url + '/health')).status, 200);
});

test('SIGTERM under load: every stream ends cleanly, new requests are refused, exit 0', async () => {
  const own = await startServer(G4, join(dir, 'model'),
                                ['--max-batch', '4', '--max-waiting', '4', '--ctx-size', '4096',
                                 '--shutdown-grace', '4']);
  const start = (i, maxTokens) => streamCompletion(own.url, { model: 'tiny', prompt: `Term ${i}`,
                                                              ignore_eos: true, max_tokens: maxTokens });
  // Two short streams finish within the grace period; the long ones run past it and are cut;
  // the last two are still queued when the signal comes.
  const streams = [start(0, 16), start(1, 16), start(2, 3500), start(3, 3500)];
  await waitMetric(own.url, 'vllm:num_requests_running', 4);
  streams.push(start(4, 3500), start(5, 3500));
  await waitMetric(own.url, 'vllm:num_requests_waiting', 2);
  own.proc.kill('SIGTERM');
  await sleep(300);
  const late = await fetch(own.url + '/v1/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', prompt: 'late', max_tokens: 2 }),
  }).catch(() => null);
  if (late) assert.equal(late.status, 503, 'a request after SIGTERM must be refused');
  const health = await fetch(own.url + '/health').catch(() => null);
  if (health) {
    assert.equal(health.status, 503, 'a draining server must fail its readiness probe');
    assert.match((await health.json()).error.message, /draining/);
  }
  const results = await Promise.all(streams.map((p) => p.catch((e) => ({ thrown: String(e) }))));
  for (const [i, r] of results.entries()) {
    assert.equal(r.thrown, undefined, `stream ${i} broke: ${r.thrown}`);
    assert.equal(r.status, 200, `stream ${i}`);
    assert.ok(r.done, `stream ${i} ended without [DONE]`);
    assert.equal(r.error, null);
  }
  // Finished by reaching max_tokens, not cut. Chunks are not tokens: a token whose text is a
  // partial character is held back and sent with the next one (a CI run counted 15 of 16).
  assert.equal(results[0].finishReason, 'length',
               'an in-flight request must finish within the grace');
  assert.equal(results[1].finishReason, 'length');
  for (const r of results.slice(2)) {
    assert.notEqual(r.finishReason, 'length', 'the long streams were cut');
  }
  const code = await Promise.race([own.exited, sleep(20000).then(() => 'hung')]);
  assert.equal(code, 0, `exit ${code}:\n${own.log()}`);
});
