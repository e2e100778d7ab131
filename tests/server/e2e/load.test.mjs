// CI-sized load test of `g4 serve` (benchmarks/e2e/server_load.mjs is the 64-client version):
// 16 concurrent streaming clients against a server with room for 2 running + 2 waiting, for a
// bounded count and time. Every request is served or refused with 503, no served output
// differs from the prompt's output alone, memory does not grow from one round to the next, and
// afterwards no slot or KV block is left held.
// Run by ctest as: node --test tests/server/e2e/load.test.mjs (env G4_BIN).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeTinyModel, startServer, stopServer, metric, memoryKiB, runLoad, soloOutputs,
         percentile } from './harness.mjs';

const G4 = process.env.G4_BIN;
const PROMPTS = Array.from({ length: 6 }, (_, i) => `Load ${i}: ` + 'the quick brown fox '.repeat(i + 1));
const MAX_TOKENS = 24;
let dir, server;

before(async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  dir = makeTinyModel(G4);
  server = await startServer(G4, join(dir, 'model'),
                             ['--max-batch', '2', '--max-waiting', '2', '--ctx-size', '512']);
});

after(async () => {
  if (server) assert.equal(await stopServer(server), 0, 'SIGTERM must end the server with exit 0');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('16 streaming clients: served or 503, outputs intact, memory bounded, nothing leaked', async () => {
  const refs = await soloOutputs(server.url, PROMPTS, MAX_TOKENS);
  const round = () => runLoad({ url: server.url, clients: 16, durationMs: 60000, maxServed: 32, maxSent: 3000,
                                maxTokens: MAX_TOKENS, prompts: PROMPTS, refs });
  const first = await round();
  const afterFirst = memoryKiB(server.proc.pid);
  const second = await round();
  const afterSecond = memoryKiB(server.proc.pid);
  for (const [name, s] of [['first', first], ['second', second]]) {
    assert.deepEqual(s.errors, [], `${name} round: failures or corrupted outputs`);
    assert.equal(s.served + s.refused, s.sent, `${name} round: every request served or refused`);
    assert.ok(s.served >= 16, `${name} round served only ${s.served}`);
    console.log(`# ${name} round: sent ${s.sent} served ${s.served} refused(503) ${s.refused}; ` +
                `TTFT p50 ${percentile(s.ttftMs, 50).toFixed(1)} ms p99 ${percentile(s.ttftMs, 99).toFixed(1)} ms; ` +
                `ITL p50 ${percentile(s.itlMs, 50).toFixed(1)} ms p99 ${percentile(s.itlMs, 99).toFixed(1)} ms`);
  }
  // 16 clients on 4 places: some must have been refused, and the 503 path is part of the test.
  assert.ok(first.refused + second.refused > 0, 'no request was refused');
  console.log(`# VmHWM after round 1 ${afterFirst.hwm} KiB, after round 2 ${afterSecond.hwm} KiB`);
  // The same load again must not raise the peak by more than allocator noise: a per-request
  // leak would grow it with every round.
  assert.ok(afterSecond.hwm <= afterFirst.hwm * 1.10 + 16384,
            `peak resident memory grew ${afterFirst.hwm} -> ${afterSecond.hwm} KiB`);
  assert.equal(await metric(server.url, 'vllm:num_requests_running'), 0);
  assert.equal(await metric(server.url, 'vllm:num_requests_waiting'), 0);
  assert.equal(await metric(server.url, 'g4:kv_cache_blocks_in_use'), 0);
  assert.equal(await metric(server.url, 'g4:kv_cache_bytes_in_use'), 0);
});
