// Structured output (response_format) end to end, with the official openai client and ajv: a
// tiny random-weight checkpoint whose answers only the grammar can make valid. Every finished
// JSON answer is validated against its schema (schemas.mjs); an answer cut by max_tokens
// finishes with "length" and is counted, and most must finish with "stop". The same greedy
// request streamed and not streamed gives the same text (with and without a grammar); what the
// grammar cannot enforce, and a message without content, are 400s naming the field.
// Tool calling: tools.test.mjs. The same schemas on the real Gemma 3: real_structured.test.mjs.
// Run by ctest as: node --test tests/server/e2e/structured.test.mjs (G4_BIN: the g4 binary).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { makeTinyModel, startServer, stopServer } from './harness.mjs';
import { schemaCorpus, validatorOf, makeAjv } from './schemas.mjs';

const G4 = process.env.G4_BIN;
const ajv = makeAjv();
const MAX_TOKENS = 400;
let dir, server, client;

before(async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  dir = makeTinyModel(G4);
  server = await startServer(G4, join(dir, 'model'), ['--max-batch', '4', '--ctx-size', '2048']);
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  if (server) await stopServer(server);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const user = (content) => [{ role: 'user', content }];

function jsonFormat(name, schema) {
  return { type: 'json_schema', json_schema: { name, schema, strict: true } };
}

async function post(path, body) {
  const r = await fetch(server.url + path, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

// A streamed chat completion reassembled: the content deltas joined, the finish reason, the
// degeneracy verdict of the last chunk, and the role of the first delta.
async function streamChat(body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const out = { content: '', finish: null, degenerate: undefined, role: undefined, toolCalls: 0 };
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.role ??= choice.delta.role;
    out.content += choice.delta.content ?? '';
    out.toolCalls += choice.delta.tool_calls?.length ?? 0;
    if (choice.finish_reason) {
      out.finish = choice.finish_reason;
      out.degenerate = chunk.g4?.degenerate;
    }
  }
  return out;
}

// True when a parsed JSON value holds a number no double can hold (JSON.parse made it Infinity).
const hasInfinity = (v) => (typeof v === 'number' ? !Number.isFinite(v)
  : v !== null && typeof v === 'object' && Object.values(v).some(hasInfinity));

// Parses and validates a finished answer; fails with the text and ajv's errors.
function assertValid(validate, text, what) {
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${what}: not JSON: ${JSON.stringify(text)}`);
  assert.ok(!hasInfinity(value), `${what}: a number beyond a double's range: ${JSON.stringify(text)}`);
  assert.ok(validate(value), `${what}: ${JSON.stringify(text)}\n${JSON.stringify(validate.errors)}`);
  return value;
}

// The common shape of a non-streamed chat answer under a grammar: content, no tool calls, the
// degeneracy verdict, finish_reason stop (then valid) or length (then cut at max_tokens).
function checkAnswer(r, validate, maxTokens, what) {
  assert.equal(r.object, 'chat.completion');
  const choice = r.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.tool_calls, undefined, what);
  assert.equal(typeof choice.message.content, 'string', what);
  assert.equal(typeof r.g4?.degenerate, 'boolean', `${what}: the degeneracy verdict is reported`);
  assert.ok(['stop', 'length'].includes(choice.finish_reason), `${what}: ${choice.finish_reason}`);
  if (choice.finish_reason === 'length') {
    // Cut: a valid prefix only, so not parsed; it must have used every token it was given.
    assert.equal(r.usage.completion_tokens, maxTokens, what);
    return false;
  }
  assertValid(validate, choice.message.content, what);
  return true;
}

test('every schema of the corpus: answers valid against it (greedy streamed and not, sampled)',
     { concurrency: 4 }, async (t) => {
  const corpus = schemaCorpus();
  assert.ok(corpus.length >= 50, `${corpus.length} schemas`);
  const tally = { answers: 0, stop: 0, cut: [] };
  const count = (name, finished) => {
    ++tally.answers;
    if (finished) ++tally.stop; else tally.cut.push(name);
  };
  // Four at a time (the server batches them): the subtests below share the parent's concurrency.
  await Promise.all(corpus.map(([name, schema], i) => t.test(name, async () => {
    const validate = validatorOf(name);
    const body = { model: 'tiny', messages: user(`Answer as JSON: ${name.replace(/_/g, ' ')}`),
                   max_tokens: MAX_TOKENS, temperature: 0, response_format: jsonFormat(name, schema) };
    const whole = await client.chat.completions.create(body);
    count(name, checkAnswer(whole, validate, MAX_TOKENS, `${name} (greedy)`));
    // The same greedy request streamed: the same text, finish reason and verdict.
    const streamed = await streamChat(body);
    assert.equal(streamed.role, 'assistant');
    assert.equal(streamed.toolCalls, 0);
    assert.equal(streamed.content, whole.choices[0].message.content, `${name}: streamed text`);
    assert.equal(streamed.finish, whole.choices[0].finish_reason, `${name}: streamed finish`);
    assert.equal(streamed.degenerate, whole.g4.degenerate, `${name}: streamed verdict`);
    if (i % 4 === 0) {  // a sampled answer too: temperature 1 with a seed
      const sampled = await client.chat.completions.create({ ...body, temperature: 1, seed: 1000 + i });
      count(`${name} (sampled)`, checkAnswer(sampled, validate, MAX_TOKENS, `${name} (seed ${1000 + i})`));
    }
  })));
  t.diagnostic(`${tally.answers} answers to ${corpus.length} schemas: ${tally.stop} finished ` +
               `and valid, ${tally.cut.length} cut by max_tokens (${tally.cut.join(', ')})`);
  assert.ok(tally.stop >= 0.9 * tally.answers,
            `only ${tally.stop} of ${tally.answers} answers finished; cut: ${tally.cut.join(', ')}`);
});

test('json_object: answers are JSON objects (chat greedy, streamed and sampled; completions)',
     async () => {
  const body = { model: 'tiny', messages: user('An object, please.'), max_tokens: 300,
                 temperature: 0, response_format: { type: 'json_object' } };
  const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
  const answers = [await client.chat.completions.create(body)];
  const streamed = await streamChat(body);
  assert.equal(streamed.content, answers[0].choices[0].message.content);
  assert.equal(streamed.finish, answers[0].choices[0].finish_reason);
  for (const seed of [1, 2, 3, 4]) {
    answers.push(await client.chat.completions.create({ ...body, temperature: 1, seed }));
  }
  let finished = 0;
  for (const r of answers) {
    const { content } = r.choices[0].message;
    assert.equal(typeof r.g4.degenerate, 'boolean');
    if (r.choices[0].finish_reason === 'length') {
      assert.match(content, /^\s*\{/, 'a cut object is still the start of one');
      continue;
    }
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(isObject(JSON.parse(content)), content);
    ++finished;
  }
  // Any keys, any values: like the free_object schema, only max_tokens bounds a wandering model.
  assert.ok(finished >= 1, `${finished} of ${answers.length} json_object answers finished`);
  const c = await client.completions.create({ model: 'tiny', prompt: 'An object:', max_tokens: 300,
                                              temperature: 0, response_format: { type: 'json_object' } });
  if (c.choices[0].finish_reason === 'stop') assert.ok(isObject(JSON.parse(c.choices[0].text)));
  else assert.match(c.choices[0].text, /^\s*\{/);
});

test('json_schema on /v1/completions too, streamed and not', async () => {
  const schema = { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, maxItems: 3 };
  const body = { model: 'tiny', prompt: 'digits:', max_tokens: 100, temperature: 0,
                 response_format: jsonFormat('digits', schema) };
  const c = await client.completions.create(body);
  assert.equal(c.choices[0].finish_reason, 'stop');
  assertValid(ajv.compile(schema), c.choices[0].text, 'digits');
  assert.equal(typeof c.g4.degenerate, 'boolean');
  let text = '';
  for await (const chunk of await client.completions.create({ ...body, stream: true })) {
    text += chunk.choices[0]?.text ?? '';
  }
  assert.equal(text, c.choices[0].text);
});

test('no grammar: the streamed and non-streamed text of a greedy request are equal', async () => {
  // A known bug was the non-streamed content dropping the leading space of the first token.
  const prompts = ['Tell me something.', 'Hello!', 'Continue: once upon a time', 'x', '日本語で'];
  for (const content of prompts) {
    const body = { model: 'tiny', messages: user(content), max_tokens: 24, temperature: 0 };
    const whole = await client.chat.completions.create(body);
    const streamed = await streamChat(body);
    assert.equal(streamed.content, whole.choices[0].message.content, `chat: ${content}`);
    assert.equal(streamed.finish, whole.choices[0].finish_reason, `chat: ${content}`);
    const cbody = { model: 'tiny', prompt: content, max_tokens: 24, temperature: 0 };
    const cwhole = await client.completions.create(cbody);
    let text = '';
    for await (const chunk of await client.completions.create({ ...cbody, stream: true })) {
      text += chunk.choices[0]?.text ?? '';
    }
    assert.equal(text, cwhole.choices[0].text, `completion: ${content}`);
  }
});

test('a grammar composes with logprobs, stop strings and max_tokens', async () => {
  const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 9 },
                   s: { type: 'string', maxLength: 6 } }, required: ['n', 's'],
                   additionalProperties: false };
  const base = { model: 'tiny', messages: user('x'), temperature: 0,
                 response_format: jsonFormat('ns', schema) };
  const r = await client.chat.completions.create({ ...base, max_tokens: 100, logprobs: true,
                                                  top_logprobs: 2 });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assertValid(ajv.compile(schema), r.choices[0].message.content, 'ns');
  const lp = r.choices[0].logprobs.content;
  // One entry per sampled token, in order (the end-of-turn token that stopped it included).
  assert.equal(lp.length, r.usage.completion_tokens);
  assert.ok(lp.map((t) => t.token).join('').startsWith(r.choices[0].message.content));
  assert.ok(lp.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0));
  // A stop string ends the answer even inside the value (the client asked for it).
  const stopped = await client.chat.completions.create({ ...base, max_tokens: 100, stop: [':'] });
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.equal(stopped.choices[0].message.content, r.choices[0].message.content.split(':')[0]);
  // Cut by max_tokens: "length", and what was written is a prefix of the whole answer.
  const cut = await client.chat.completions.create({ ...base, max_tokens: 3 });
  assert.equal(cut.choices[0].finish_reason, 'length');
  assert.ok(r.choices[0].message.content.startsWith(cut.choices[0].message.content));
});

// response_format schemas the grammar cannot enforce: each a 400 naming the keyword.
const UNSUPPORTED = [
  [{ type: 'string', pattern: '^a' }, 'pattern'],
  [{ type: 'object', properties: { e: { type: 'string', format: 'email' } } }, 'format'],
  [{ type: 'integer', multipleOf: 3 }, 'multipleOf'],
  [{ type: 'array', items: { type: 'integer' }, uniqueItems: true }, 'uniqueItems'],
  [{ not: { type: 'null' } }, 'not'],
  [{ allOf: [{ type: 'object' }, { required: ['a'] }] }, 'allOf'],
  [{ type: 'object', if: { required: ['a'] }, then: { required: ['b'] } }, 'if'],
  [{ type: 'object', patternProperties: { '^x': { type: 'integer' } } }, 'patternProperties'],
  [{ type: 'array', prefixItems: [{ type: 'integer' }] }, 'prefixItems'],
  [{ type: 'object', minProperties: 1 }, 'minProperties'],
  [{ type: 'number', minimum: 0.5 }, 'minimum'],
  // Nested: the keyword is found where it is.
  [{ type: 'object', properties: { a: { type: 'array', items: { type: 'string', pattern: 'x' } } } }, 'pattern'],
  [{ $defs: { d: { type: 'string', format: 'date' } }, $ref: '#/$defs/d' }, 'format'],
];

test('what the grammar cannot enforce is a 400 naming it (chat and completions)', async () => {
  for (const [schema, word] of UNSUPPORTED) {
    for (const [path, extra] of [['/v1/chat/completions', { messages: user('x') }],
                                 ['/v1/completions', { prompt: 'x' }]]) {
      const r = await post(path, { model: 'tiny', ...extra, response_format: jsonFormat('s', schema) });
      const what = `${path} ${JSON.stringify(schema)}`;
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.ok(r.body.error.message.includes(word), `${what}: ${r.body.error.message}`);
      assert.ok(r.body.error.param, `${what}: the error names the field`);
    }
  }
  // Not a format at all; a json_schema without a schema; a schema nothing satisfies.
  for (const [format, word] of [[{ type: 'xml' }, 'xml'],
                                [{ type: 'json_schema', json_schema: { name: 'n' } }, 'schema'],
                                [jsonFormat('e', { enum: [] }), 'enum'],
                                [jsonFormat('m', { type: 'array', minItems: 3, maxItems: 2 }), 'Items']]) {
    const r = await post('/v1/chat/completions', { model: 'tiny', messages: user('x'), response_format: format });
    assert.equal(r.status, 400, JSON.stringify(format));
    assert.ok(r.body.error.message.includes(word), r.body.error.message);
    assert.equal(r.body.error.param, 'response_format');
  }
  // The official client sees a BadRequestError.
  await assert.rejects(client.chat.completions.create({
    model: 'tiny', messages: user('x'), response_format: jsonFormat('p', UNSUPPORTED[0][0]) }),
  (e) => e.status === 400 && /pattern/.test(e.message));
});

test('a message without content is a 400 naming the field', async () => {
  for (const messages of [[{ role: 'user' }],
                          [{ role: 'system', content: 'Be brief.' }, { role: 'user' }]]) {
    const r = await post('/v1/chat/completions', { model: 'tiny', messages });
    assert.equal(r.status, 400, JSON.stringify(messages));
    const i = messages.length - 1;
    assert.ok(r.body.error.param === `messages[${i}].content` ||
              /content/.test(r.body.error.message), JSON.stringify(r.body));
  }
  await assert.rejects(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user' }] }),
                       (e) => e.status === 400 && /content/.test(e.message));
});
