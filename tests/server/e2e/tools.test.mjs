// Tool calling end to end, with the official openai client and ajv, on a tiny random-weight
// checkpoint (Gemma 4 chat format) whose calls only the grammar can make valid: named and
// required tool_choice, parallel calls, streamed deltas reassembled (the first delta of each
// call names it, later ones carry argument fragments), a tool-result turn answered, and bad
// declarations refused with 400s. Every call's function.arguments is a JSON string that parses
// to an object valid against the tool's parameters.
// Run by ctest as: node --test tests/server/e2e/tools.test.mjs (G4_BIN: the g4 binary).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { makeTinyModel, startServer, stopServer } from './harness.mjs';
import { makeAjv } from './schemas.mjs';

const G4 = process.env.G4_BIN;
const ajv = makeAjv();
const MAX_TOKENS = 300;
let dir, server, client;

before(async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  dir = makeTinyModel(G4);
  server = await startServer(G4, join(dir, 'model'), ['--max-batch', '4', '--ctx-size', '4096']);
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  if (server) await stopServer(server);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const fn = (name, description, parameters) =>
  ({ type: 'function', function: { name, description, ...(parameters && { parameters }) } });
const TOOLS = [
  fn('get_weather', 'Current weather in a city', {
    type: 'object', properties: {
      location: { type: 'string', maxLength: 16, description: 'City name' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location', 'unit'] }),
  fn('add', 'Adds two integers', {
    type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } },
    required: ['a', 'b'], additionalProperties: false }),
  fn('search_products', 'Searches the catalogue', {
    type: 'object', properties: {
      query: { type: 'string', maxLength: 20 },
      filters: { type: 'object', properties: {
        tags: { type: 'array', items: { enum: ['new', 'sale', 'café'] }, maxItems: 3 },
        max_price: { type: 'integer', minimum: 0, maximum: 1000 } },
        additionalProperties: false },
      limit: { type: ['integer', 'null'], minimum: 1, maximum: 10 } },
    required: ['query'], additionalProperties: false }),
  fn('now', 'The current time (no parameters)'),
];
// A tool without parameters takes an object all the same (OpenAI sends "{}").
const PARAMS = Object.fromEntries(TOOLS.map((t) => [t.function.name,
  ajv.compile(t.function.parameters ?? { type: 'object' })]));
const NAMED = (name) => ({ type: 'function', function: { name } });
const user = (content) => [{ role: 'user', content }];
const ASK = user('What is 2+3? And the weather in Paris? Any new products under 50?');

// One call as OpenAI returns it: an id, type function, a declared name, and arguments that
// JSON.parse into an object valid against that tool's parameters.
function checkCall(call, what) {
  assert.equal(typeof call.id, 'string', what);
  assert.match(call.id, /^call_/, what);
  assert.equal(call.type, 'function', what);
  const validate = PARAMS[call.function.name];
  assert.ok(validate, `${what}: unknown tool ${call.function.name}`);
  assert.equal(typeof call.function.arguments, 'string', what);
  let args;
  assert.doesNotThrow(() => { args = JSON.parse(call.function.arguments); },
                      `${what}: arguments not JSON: ${call.function.arguments}`);
  assert.ok(args !== null && typeof args === 'object' && !Array.isArray(args),
            `${what}: arguments not an object: ${call.function.arguments}`);
  assert.ok(validate(args), `${what}: ${call.function.name}(${call.function.arguments}): ` +
                            JSON.stringify(validate.errors));
}

// The calls of a non-streamed answer: finish_reason tool_calls (every call complete, checked),
// or length (cut: the calls before the last are complete and checked). Returns the calls.
function checkCalls(r, what, { single = false, maxTokens = MAX_TOKENS } = {}) {
  const c = r.choices[0];
  assert.equal(c.message.role, 'assistant', what);
  assert.equal(typeof r.g4?.degenerate, 'boolean', `${what}: the degeneracy verdict is reported`);
  const calls = c.message.tool_calls;
  assert.ok(Array.isArray(calls) && calls.length >= 1, `${what}: no tool calls: ${JSON.stringify(r)}`);
  assert.equal(new Set(calls.map((k) => k.id)).size, calls.length, `${what}: ids unique`);
  if (single) assert.equal(calls.length, 1, `${what}: ${JSON.stringify(calls)}`);
  assert.ok(['tool_calls', 'length'].includes(c.finish_reason), `${what}: ${c.finish_reason}`);
  if (c.finish_reason === 'tool_calls') {
    assert.equal(c.message.content, null, `${what}: content beside forced calls`);
    calls.forEach((k, i) => checkCall(k, `${what} call ${i}`));
  } else {
    assert.equal(r.usage.completion_tokens, maxTokens, `${what}: cut before max_tokens`);
    calls.slice(0, -1).forEach((k, i) => checkCall(k, `${what} call ${i}`));
  }
  return calls;
}

// A streamed chat completion with the tool-call deltas reassembled, checking the delta
// protocol on the way: the first delta of each call carries index, id, type "function" and
// function.name; the later ones only function.arguments fragments; calls open in index order.
async function streamTools(body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const calls = [];
  const out = { calls, content: '', finish: null, degenerate: undefined };
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.content += choice.delta.content ?? '';
    for (const d of choice.delta.tool_calls ?? []) {
      assert.equal(typeof d.index, 'number', JSON.stringify(d));
      if (!calls[d.index]) {
        assert.equal(d.index, calls.length, `calls open in order: ${JSON.stringify(d)}`);
        assert.ok(typeof d.id === 'string' && d.type === 'function' &&
                  typeof d.function?.name === 'string', `first delta: ${JSON.stringify(d)}`);
        calls[d.index] = { id: d.id, type: d.type,
                           function: { name: d.function.name, arguments: d.function.arguments ?? '' } };
      } else {
        assert.equal(d.id, undefined, `only the first delta carries the id: ${JSON.stringify(d)}`);
        assert.equal(d.function?.name, undefined, `only the first delta names the call: ${JSON.stringify(d)}`);
        assert.equal(typeof d.function?.arguments, 'string', JSON.stringify(d));
        calls[d.index].function.arguments += d.function.arguments;
      }
    }
    if (choice.finish_reason) {
      out.finish = choice.finish_reason;
      out.degenerate = chunk.g4?.degenerate;
    }
  }
  return out;
}

// Streamed and non-streamed answers to the same greedy request: the same calls (ids aside).
function assertSameCalls(streamed, whole, what) {
  const w = whole.choices[0];
  assert.equal(streamed.finish, w.finish_reason, what);
  assert.equal(typeof streamed.degenerate, 'boolean', `${what}: streamed verdict`);
  assert.deepEqual(streamed.calls.map((k) => [k.type, k.function.name, k.function.arguments]),
                   (w.message.tool_calls ?? []).map((k) => [k.type, k.function.name, k.function.arguments]),
                   what);
  assert.equal(streamed.content, w.message.content ?? '', what);
}

test('named tool_choice: one call of that tool, valid against its parameters', async () => {
  for (const tool of TOOLS) {
    const name = tool.function.name;
    const r = await client.chat.completions.create({
      model: 'tiny', messages: ASK, tools: TOOLS, tool_choice: NAMED(name),
      parallel_tool_calls: false, max_tokens: MAX_TOKENS, temperature: 0 });
    const [call] = checkCalls(r, `named ${name}`, { single: true });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, name);
  }
  // parallel_tool_calls left at its default (true): the named tool is the first call.
  const r = await client.chat.completions.create({
    model: 'tiny', messages: ASK, tools: TOOLS, tool_choice: NAMED('add'),
    max_tokens: MAX_TOKENS, temperature: 0 });
  assert.equal(checkCalls(r, 'named add, parallel')[0].function.name, 'add');
});

test('tool_choice required: exactly one call, or one or more with parallel_tool_calls',
     async (t) => {
  let cut = 0;
  const counts = [];
  for (const parallel of [false, true]) {
    for (const sampling of [{ temperature: 0 }, ...[1, 2, 3, 4].map((seed) => ({ temperature: 1, seed }))]) {
      const what = `required, parallel ${parallel}, ${JSON.stringify(sampling)}`;
      const r = await client.chat.completions.create({
        model: 'tiny', messages: ASK, tools: TOOLS, tool_choice: 'required',
        parallel_tool_calls: parallel, max_tokens: MAX_TOKENS, ...sampling });
      counts.push(checkCalls(r, what, { single: !parallel }).length);
      if (!parallel) assert.equal(r.choices[0].finish_reason, 'tool_calls', what);
      if (r.choices[0].finish_reason === 'length') ++cut;
    }
  }
  t.diagnostic(`calls per answer (5 single, 5 parallel): ${counts.join(' ')}; ` +
               `${cut} parallel answers cut by max_tokens`);
});

test('streamed tool calls: deltas reassemble to the non-streamed calls', async () => {
  for (const [choice, parallel] of [['required', false], ['required', true],
                                    [NAMED('get_weather'), false], [NAMED('search_products'), false],
                                    [NAMED('now'), false]]) {
    const body = { model: 'tiny', messages: ASK, tools: TOOLS, tool_choice: choice,
                   parallel_tool_calls: parallel, max_tokens: MAX_TOKENS, temperature: 0 };
    const what = `stream ${JSON.stringify(choice)} parallel ${parallel}`;
    const whole = await client.chat.completions.create(body);
    const streamed = await streamTools(body);
    assertSameCalls(streamed, whole, what);
    if (streamed.finish === 'tool_calls') {
      streamed.calls.forEach((k, i) => checkCall(k, `${what} call ${i}`));
    }
    if (!parallel) {
      assert.equal(streamed.finish, 'tool_calls', what);
      assert.equal(streamed.calls.length, 1, what);
      if (typeof choice === 'object') assert.equal(streamed.calls[0].function.name, choice.function.name);
    }
  }
});

test('tool_choice auto: text, or calls that are valid', async (t) => {
  let withCalls = 0;
  for (const sampling of [{ temperature: 0 }, ...[5, 6, 7, 8].map((seed) => ({ temperature: 1, seed }))]) {
    const body = { model: 'tiny', messages: ASK, tools: TOOLS, max_tokens: 64, ...sampling };
    const what = `auto ${JSON.stringify(sampling)}`;
    const r = await client.chat.completions.create(body);
    const c = r.choices[0];
    if (c.message.tool_calls) {
      ++withCalls;
      checkCalls(r, what, { maxTokens: 64 });
    } else {
      assert.equal(typeof c.message.content, 'string', what);
      assert.ok(['stop', 'length'].includes(c.finish_reason), `${what}: ${c.finish_reason}`);
    }
    if (sampling.temperature === 0) assertSameCalls(await streamTools(body), r, what);
  }
  t.diagnostic(`${withCalls} of 5 auto answers called tools`);
});

test('a tool-result turn is accepted and answered', async () => {
  const history = [
    { role: 'system', content: 'You can call tools.' },
    ...ASK,
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
      { id: 'call_2', type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '5' },
    { role: 'tool', tool_call_id: 'call_2', content: '{"temperature": 21, "sky": "clear"}' },
  ];
  // tool_choice none: a text answer, no calls; streamed the same.
  const none = { model: 'tiny', messages: history, tools: TOOLS, tool_choice: 'none',
                 max_tokens: 24, temperature: 0 };
  const r = await client.chat.completions.create(none);
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(typeof r.g4.degenerate, 'boolean');
  assertSameCalls(await streamTools(none), r, 'tool result, none');
  // auto: text or valid calls.
  const auto = await client.chat.completions.create({ ...none, tool_choice: 'auto' });
  if (auto.choices[0].message.tool_calls) checkCalls(auto, 'tool result, auto', { maxTokens: 24 });
  else assert.equal(typeof auto.choices[0].message.content, 'string');
  // required: another call, valid.
  const forced = await client.chat.completions.create({
    ...none, tool_choice: 'required', parallel_tool_calls: false, max_tokens: MAX_TOKENS });
  checkCalls(forced, 'tool result, required', { single: true });
  // One call and its result, an assistant message with text beside its call, and the turn
  // after the model's answer: all rendered and answered.
  const longer = [
    ...user('What is 2+3?'),
    { role: 'assistant', content: 'Let me add them.', tool_calls: [
      { id: 'call_9', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }] },
    { role: 'tool', tool_call_id: 'call_9', content: '5' },
    { role: 'assistant', content: 'It is 5.' },
    ...user('And the time?'),
  ];
  const again = await client.chat.completions.create({
    model: 'tiny', messages: longer, tools: TOOLS, tool_choice: NAMED('now'),
    parallel_tool_calls: false, max_tokens: MAX_TOKENS, temperature: 0 });
  assert.equal(checkCalls(again, 'second turn', { single: true })[0].function.name, 'now');
  const text = await client.chat.completions.create({
    model: 'tiny', messages: longer, tools: TOOLS, tool_choice: 'none', max_tokens: 16, temperature: 0 });
  assert.equal(text.choices[0].message.tool_calls, undefined);
});

test('tools with a JSON response_format under auto: the answer is the JSON value', async () => {
  const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'],
                   additionalProperties: false };
  const r = await client.chat.completions.create({
    model: 'tiny', messages: ASK, tools: TOOLS, max_tokens: 100, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'ok', schema } } });
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(ajv.compile(schema)(JSON.parse(r.choices[0].message.content)), r.choices[0].message.content);
});

async function post(body) {
  const r = await fetch(server.url + '/v1/chat/completions', { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', ...body }) });
  return { status: r.status, body: await r.json() };
}

test('bad tool declarations and choices are 400s naming what is wrong', async () => {
  const params = (parameters) => [fn('f', 'x', parameters)];
  const cases = [
    [{ tools: params({ type: 'object', properties: { a: { type: 'array', uniqueItems: true } } }) }, 'uniqueItems', 'tools'],
    [{ tools: params({ type: 'object', properties: { a: { type: 'string', pattern: '^x' } } }) }, 'pattern', 'tools'],
    [{ tools: params({ type: 'object', properties: { a: { type: 'string', format: 'date' } } }) }, 'format', 'tools'],
    [{ tools: params({ type: 'object', properties: { a: { type: 'strnig' } } }) }, 'strnig', 'tools'],
    [{ tools: params({ type: 'string' }) }, 'object', 'tools'],
    [{ tools: params({ type: 'object', properties: {}, required: ['a'] }) }, 'a', 'tools'],
    [{ tools: TOOLS, tool_choice: NAMED('nope') }, 'nope', 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool', 'tool_choice'],
    [{ tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', 'response_format'],
  ];
  for (const [extra, word, param] of cases) {
    const r = await post({ messages: user('x'), ...extra });
    const what = JSON.stringify(extra).slice(0, 200);
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.ok(r.body.error.message.includes(word), `${what}: ${r.body.error.message}`);
    assert.equal(r.body.error.param, param, `${what}: ${JSON.stringify(r.body.error)}`);
  }
  // The official client sees a BadRequestError.
  await assert.rejects(client.chat.completions.create({
    model: 'tiny', messages: user('x'), tools: params({ type: 'object', properties: { a: { type: 'string', pattern: 'x' } } }) }),
  (e) => e.status === 400 && /pattern/.test(e.message));
});
