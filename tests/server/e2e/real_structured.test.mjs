// Structured output on the real checkpoint: Gemma 3 270M (Q4_K_M GGUF, scripts/real_model.sh)
// served by g4, every schema of the corpus asked through /v1/completions (this GGUF has no chat
// template) and every finished answer validated by ajv. Also: tools on a model without a tool
// syntax are a 400. Skips when the model is missing, except under CI.
// Run by ctest as: node --test tests/server/e2e/real_structured.test.mjs (G4_BIN: the g4 binary).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import { startServer, stopServer } from './harness.mjs';
import { schemaCorpus } from './schemas.mjs';

const G4 = process.env.G4_BIN;
const MODEL = process.env.G4_GEMMA3_GGUF ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'g4', 'models',
       'gemma-3-270m-q4_k_m.gguf');
const present = existsSync(MODEL);
if (!present && process.env.CI) throw new Error(`missing ${MODEL} (CI is set): run scripts/setup.sh`);
const ajv = new Ajv({ strict: false, allErrors: true });
let server;

before(async () => {
  if (!present) return;
  server = await startServer(G4, MODEL, ['--max-batch', '4', '--ctx-size', '1024']);
});

after(async () => {
  if (server) await stopServer(server);
});

async function post(path, body) {
  const r = await fetch(server.url + path, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

test('real Gemma 3 270M: answers valid against every schema', { skip: !present && `missing ${MODEL}` },
     async (t) => {
  const corpus = schemaCorpus();
  const results = [];
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (next < corpus.length) {
      const [name, schema] = corpus[next++];
      const r = await post('/v1/completions', {
        prompt: `A JSON value (${name.replace(/_/g, ' ')}):\n`, max_tokens: 160, temperature: 0,
        response_format: { type: 'json_schema', json_schema: { name, schema } } });
      results.push({ name, schema, r });
    }
  }));
  let cut = 0, degenerate = 0;
  for (const { name, schema, r } of results) {
    assert.equal(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
    const choice = r.body.choices[0];
    if (r.body.g4.degenerate) ++degenerate;
    if (choice.finish_reason === 'length') {
      ++cut;
      continue;
    }
    let value;
    assert.doesNotThrow(() => { value = JSON.parse(choice.text); }, `${name}: ${choice.text}`);
    const validate = ajv.compile(schema);
    assert.ok(validate(value), `${name}: ${choice.text}\n${JSON.stringify(validate.errors)}`);
  }
  t.diagnostic(`${results.length} schemas: ${results.length - cut} finished and valid, ` +
               `${cut} cut by max_tokens, ${degenerate} flagged degenerate`);
  assert.ok(cut <= results.length / 4, `${cut} of ${results.length} cut`);
});

test('real Gemma 3 270M: tools are a 400 (no tool syntax)', { skip: !present && `missing ${MODEL}` },
     async () => {
  const r = await post('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'x' }],
    tools: [{ type: 'function', function: { name: 'f' } }] });
  assert.equal(r.status, 400);
});
