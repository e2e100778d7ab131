// Aggregate decode throughput of a running `g4 serve` with 1, 4 and 8 concurrent streams
// (a benchmark, not a test). Each stream asks for the same number of tokens with ignore_eos;
// aggregate tok/s = all generated tokens / wall time from the first to the last token, so the
// prompts' prefill is left out; TTFT is reported apart.
// Usage: node benchmarks/e2e/server_concurrency.mjs http://127.0.0.1:8080 [tokens] [1,4,8]
import OpenAI from '../../tests/node_modules/openai/index.mjs';

const base = process.argv[2] ?? 'http://127.0.0.1:8080';
const tokens = Number(process.argv[3] ?? 32);
const levels = (process.argv[4] ?? '1,4,8').split(',').map(Number);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
const model = (await client.models.list()).data[0].id;

async function stream(i, t0) {
  const s = await client.completions.create({
    model, prompt: `Request ${i}: tell me a story about the number ${i}.`, max_tokens: tokens,
    temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let first = null, last = null, n = 0;
  for await (const chunk of s) {
    if (chunk.usage) n = chunk.usage.completion_tokens;
    if (!chunk.choices.length || chunk.choices[0].finish_reason) continue;
    const now = performance.now();
    first ??= now;
    last = now;
  }
  return { ttft: first - t0, first, last, n };
}

console.log('streams | tokens | wall s (first->last token) | aggregate tok/s | per-stream tok/s | mean TTFT s');
for (const n of levels) {
  const t0 = performance.now();
  const runs = await Promise.all(Array.from({ length: n }, (_, i) => stream(i, t0)));
  const first = Math.min(...runs.map((r) => r.first)), last = Math.max(...runs.map((r) => r.last));
  const total = runs.reduce((a, r) => a + r.n, 0);
  const wall = (last - first) / 1000;
  const ttft = runs.reduce((a, r) => a + r.ttft, 0) / n / 1000;
  console.log(`${n} | ${total} | ${wall.toFixed(2)} | ${(total / wall).toFixed(2)} | ` +
              `${(total / wall / n).toFixed(2)} | ${ttft.toFixed(2)}`);
}
