// Structured output and tool calling end to end, with the official openai client and ajv:
// a tiny random-weight checkpoint (real Gemma 4 vocabulary) whose answers only the grammar can
// make valid. Every JSON answer is validated against its schema; tool-call arguments against
// the tool's parameters. Also: the same greedy request streamed and not streamed gives the same
// text, and a message without content is a 400 naming the field.
// Run by ctest as: node --test tests/server/e2e/structured.test.mjs (G4_BIN: the g4 binary).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { makeTinyModel, startServer, stopServer } from './harness.mjs';
import { schemaCorpus } from './schemas.mjs';

const G4 = process.env.G4_BIN;
const ajv = new Ajv({ strict: false, allErrors: true });
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

// Runs `fn` over `items` with at most `limit` in flight (the server batches them).
async function pool(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

function jsonFormat(name, schema) {
  return { type: 'json_schema', json_schema: { name, schema, strict: true } };
}

test('every schema of the corpus: answers valid against it (greedy and sampled)', async (t) => {
  const corpus = schemaCorpus();
  assert.ok(corpus.length >= 50);
  const jobs = corpus.flatMap(([name, schema], i) => [
    { name, schema, temperature: 0 },
    ...(i % 4 === 0 ? [{ name, schema, temperature: 1, seed: i }] : []),
  ]);
  let cut = 0;
  const results = await pool(jobs, 4, async (job) => {
    const r = await client.chat.completions.create({
      model: 'tiny', messages: user(`Answer as JSON: ${job.name}`), max_tokens: 400,
      temperature: job.temperature, seed: job.seed, response_format: jsonFormat(job.name, job.schema),
    });
    return { job, r };
  });
  for (const { job, r } of results) {
    const choice = r.choices[0];
    const text = choice.message.content;
    assert.equal(typeof r.g4?.degenerate, 'boolean', 'the degeneracy verdict is reported');
    if (choice.finish_reason === 'length') {  // a valid prefix, cut: counted, not validated
      ++cut;
      continue;
    }
    assert.equal(choice.finish_reason, 'stop', job.name);
    let value;
    assert.doesNotThrow(() => { value = JSON.parse(text); }, `${job.name}: ${text}`);
    const validate = ajv.compile(job.schema);
    assert.ok(validate(value), `${job.name}: ${text}\n${JSON.stringify(validate.errors)}`);
  }
  t.diagnostic(`${jobs.length} answers to ${corpus.length} schemas, ${cut} cut by max_tokens`);
  // Only the deliberately unbounded schemas may run out of tokens.
  assert.ok(cut <= Math.ceil(jobs.length * 0.1), `${cut} of ${jobs.length} answers were cut`);
});

test('json_object answers are JSON objects; completions take response_format too', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny', messages: user('an object'), max_tokens: 300, temperature: 0,
    response_format: { type: 'json_object' },
  });
  if (r.choices[0].finish_reason === 'stop') {
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(v !== null && !Array.isArray(v));
  } else {
    assert.equal(r.choices[0].message.content[0], '{');
  }
  const schema = { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, maxItems: 3 };
  const c = await client.completions.create({
    model: 'tiny', prompt: 'digits:', max_tokens: 100, temperature: 0,
    response_format: jsonFormat('digits', schema),
  });
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.ok(ajv.compile(schema)(JSON.parse(c.choices[0].text)), c.choices[0].text);
});

test('streamed and non-streamed answers are the same text (with and without a grammar)', async () => {
  const schema = { type: 'object', properties: { a: { type: 'string', maxLength: 10 } },
                   required: ['a'], additionalProperties: false };
  for (const extra of [{}, { response_format: jsonFormat('a', schema) }]) {
    const body = { model: 'tiny', messages: user('Tell me something.'), max_tokens: 24,
                   temperature: 0, ...extra };
    const whole = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, whole.choices[0].message.content, JSON.stringify(extra));
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

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather',
    parameters: { type: 'object', properties: {
      location: { type: 'string', maxLength: 16 },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['location', 'unit'] } } },
  { type: 'function', function: { name: 'add', description: 'Adds two integers',
    parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } },
                  required: ['a', 'b'] } } },
  { type: 'function', function: { name: 'now', description: 'The time' } },
];
const PARAMS = Object.fromEntries(TOOLS.map((t) => [t.function.name,
  ajv.compile(t.function.parameters ?? { type: 'object' })]));

function checkCall(call) {
  assert.match(call.id, /^call_/);
  assert.equal(call.type, 'function');
  const validate = PARAMS[call.function.name];
  assert.ok(validate, `unknown tool ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `${call.function.name}(${call.function.arguments}): ` +
                            JSON.stringify(validate.errors));
}

test('tool_choice required and named: calls valid against the declared parameters', async () => {
  for (const [choice, parallel] of [['required', false], ['required', true],
                                    [{ type: 'function', function: { name: 'add' } }, false]]) {
    const r = await client.chat.completions.create({
      model: 'tiny', messages: user('What is 2+3? And the weather in Paris?'), tools: TOOLS,
      tool_choice: choice, parallel_tool_calls: parallel, max_tokens: 200, temperature: 0,
    });
    const c = r.choices[0];
    assert.ok(c.message.tool_calls?.length >= 1, JSON.stringify(r));
    if (!parallel) {
      assert.equal(c.message.tool_calls.length, 1);
      assert.equal(c.finish_reason, 'tool_calls');
      assert.equal(c.message.content, null);
    }
    if (typeof choice === 'object') assert.equal(c.message.tool_calls[0].function.name, 'add');
    // A parallel answer cut by max_tokens finishes with "length"; its closed calls still count.
    const complete = c.finish_reason === 'tool_calls' ? c.message.tool_calls
                                                       : c.message.tool_calls.slice(0, -1);
    complete.forEach(checkCall);
  }
});

test('tool calls streamed: the first delta names the call, fragments reassemble', async () => {
  const body = { model: 'tiny', messages: user('weather?'), tools: TOOLS, tool_choice: 'required',
                 parallel_tool_calls: false, max_tokens: 200, temperature: 0 };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const calls = [];
  let finish;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const d of choice.delta.tool_calls ?? []) {
      if (!calls[d.index]) {
        assert.ok(d.id && d.type === 'function' && d.function?.name, JSON.stringify(d));
        calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
      } else {
        assert.equal(d.function?.name, undefined, 'only the first delta names the call');
      }
      calls[d.index].function.arguments += d.function?.arguments ?? '';
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  checkCall(calls[0]);
  const w = whole.choices[0].message.tool_calls[0];
  assert.equal(calls[0].function.name, w.function.name);
  assert.equal(calls[0].function.arguments, w.function.arguments);
});

test('a tool-result turn is rendered and answered; tool_choice none answers text', async () => {
  const messages = [
    { role: 'user', content: 'What is 2+3?' },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '5' },
  ];
  const r = await client.chat.completions.create({
    model: 'tiny', messages, tools: TOOLS, tool_choice: 'none', max_tokens: 16, temperature: 0 });
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(typeof r.choices[0].message.content, 'string');
  const forced = await client.chat.completions.create({
    model: 'tiny', messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false,
    max_tokens: 200, temperature: 0 });
  assert.equal(forced.choices[0].finish_reason, 'tool_calls');
  checkCall(forced.choices[0].message.tool_calls[0]);
});

async function post(path, body) {
  const r = await fetch(server.url + path, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

test('what the grammar cannot enforce is a 400 naming it', async () => {
  const cases = [
    [{ response_format: jsonFormat('p', { type: 'string', pattern: '^a' }) }, 'pattern'],
    [{ response_format: jsonFormat('f', { type: 'object', properties: { e: { type: 'string', format: 'email' } } }) }, 'format'],
    [{ response_format: jsonFormat('m', { type: 'integer', multipleOf: 3 }) }, 'multipleOf'],
    [{ response_format: { type: 'xml' } }, 'xml'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'array', uniqueItems: true } } } } }] }, 'uniqueItems'],
    [{ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'nope'],
  ];
  for (const [extra, word] of cases) {
    const r = await post('/v1/chat/completions', { messages: user('x'), ...extra });
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.ok(r.body.error.message.includes(word), r.body.error.message);
    assert.ok(r.body.error.param, 'the error names the field');
  }
  const noContent = await post('/v1/chat/completions', { messages: [{ role: 'user' }] });
  assert.equal(noContent.status, 400);
  assert.equal(noContent.body.error.param, 'messages[0].content');
});
