// Load benchmark of `g4 serve` on the tiny checkpoint (loopback only; bounded in requests and
// time): N concurrent streaming clients (default 64) send greedy completions back to back. It
// reports requests served and refused (503: queue full), the server's peak resident memory
// (VmHWM of /proc/PID/status) and p50/p99 time to first token and inter-token latency, and
// checks that every served output equals that prompt's output alone (no cross-talk) and that
// /metrics shows no slot or KV block held afterwards. Exit status 1 on any violation.
// Usage: G4_BIN=build/g4 node benchmarks/e2e/server_load.mjs [clients] [seconds] [max_served]
//        [max_tokens] [max_batch] [max_waiting]
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeTinyModel, startServer, stopServer, metric, memoryKiB, runLoad, soloOutputs,
         percentile } from '../../tests/server/e2e/harness.mjs';

const G4 = process.env.G4_BIN ?? 'build/g4';
const [clients, seconds, maxRequests, maxTokens, maxBatch, maxWaiting] =
    [64, 60, 640, 32, 8, 32].map((d, i) => Number(process.argv[2 + i] ?? d));
const prompts = Array.from({ length: 16 }, (_, i) => `Request ${i}: ` + 'tell me a story '.repeat(1 + (i % 5)));

const dir = makeTinyModel(G4);
const server = await startServer(G4, join(dir, 'model'),
                                 ['--max-batch', String(maxBatch), '--max-waiting', String(maxWaiting),
                                  '--ctx-size', '1024']);
let ok = true;
try {
  const base = memoryKiB(server.proc.pid);
  const refs = await soloOutputs(server.url, prompts, maxTokens);
  let peakRunning = 0, peakWaiting = 0;
  const t0 = performance.now();
  const s = await runLoad({ url: server.url, clients, durationMs: seconds * 1000, maxServed: maxRequests,
                            maxTokens, prompts, refs, onSample: async () => {
                              const text = await (await fetch(server.url + '/metrics')).text();
                              const v = (n) => Number((new RegExp(`^${n}\\{[^}]*\\} (\\S+)`, 'm').exec(text) ?? [0, 0])[1]);
                              peakRunning = Math.max(peakRunning, v('vllm:num_requests_running'));
                              peakWaiting = Math.max(peakWaiting, v('vllm:num_requests_waiting'));
                            } });
  const wall = (performance.now() - t0) / 1000;
  const mem = memoryKiB(server.proc.pid);
  const left = {
    running: await metric(server.url, 'vllm:num_requests_running'),
    waiting: await metric(server.url, 'vllm:num_requests_waiting'),
    blocks: await metric(server.url, 'g4:kv_cache_blocks_in_use'),
  };
  console.log(`clients ${clients}, max_tokens ${maxTokens}, max_batch ${maxBatch}, max_waiting ${maxWaiting}, wall ${wall.toFixed(1)} s`);
  console.log(`requests: sent ${s.sent}, served ${s.served}, refused (503) ${s.refused}, failed ${s.failed}, corrupted ${s.corrupted}`);
  console.log(`memory: VmRSS idle ${(base.rss / 1024).toFixed(1)} MiB, VmHWM ${(mem.hwm / 1024).toFixed(1)} MiB, VmRSS after ${(mem.rss / 1024).toFixed(1)} MiB`);
  console.log(`TTFT ms: p50 ${percentile(s.ttftMs, 50).toFixed(1)}, p99 ${percentile(s.ttftMs, 99).toFixed(1)} (${s.ttftMs.length} requests)`);
  console.log(`ITL ms: p50 ${percentile(s.itlMs, 50).toFixed(1)}, p99 ${percentile(s.itlMs, 99).toFixed(1)} (${s.itlMs.length} gaps)`);
  console.log(`peak running ${peakRunning}, peak waiting ${peakWaiting}; after: running ${left.running}, waiting ${left.waiting}, kv blocks ${left.blocks}`);
  if (s.errors.length) console.log('errors:\n  ' + s.errors.slice(0, 10).join('\n  '));
  ok = s.failed === 0 && s.corrupted === 0 && s.served + s.refused === s.sent &&
       left.running === 0 && left.waiting === 0 && left.blocks === 0;
} finally {
  const code = await stopServer(server);
  if (code !== 0) { console.log(`server exit code ${code}`); ok = false; }
  rmSync(dir, { recursive: true, force: true });
}
console.log(ok ? 'server_load: ok' : 'server_load: FAILED');
process.exit(ok ? 0 : 1);
