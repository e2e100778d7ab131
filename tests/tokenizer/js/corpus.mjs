// The parity corpus: strings generated from a fixed seed, covering what a tokenizer gets wrong —
// mixed scripts, emoji sequences, long runs of spaces / newlines / tabs, digits, code, URLs,
// text that spells special tokens, and random valid UTF-8 from every plane. Deterministic, so a
// failure names a string that can be reproduced.

// mulberry32: a small seeded PRNG (public-domain algorithm), enough for test data.
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  "It's a truth universally acknowledged, that a single man in possession of a good fortune...",
  'Hello, world! How are you doing today?',
  'naïve café, déjà vu, façade, jalapeño, Ångström, Łódź, İstanbul',
  'Привет, мир! Съешь же ещё этих мягких французских булок.',
  'Γειά σου Κόσμε· ξεσκεπάζω την ψυχοφθόρα βδελυγμία.',
  'مرحبا بالعالم، كيف حالك اليوم؟',
  'שלום עולם, מה שלומך?',
  'नमस्ते दुनिया, आप कैसे हैं?',
  'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ',
  '日本語のテキスト、漢字とひらがなとカタカナ。',
  '中文字符测试：你好，世界！',
  '안녕하세요 세계, 한국어 문장입니다.',
  'Tiếng Việt có dấu: Xin chào thế giới.',
  'ქართული ენა, Հայերեն լեզու, ᠮᠣᠩᠭᠣᠯ',
  'Emoji: 🙂🚀👩‍💻👨‍👩‍👧‍👦🏳️‍🌈👍🏽 ❤️ ✔︎ 🇯🇵🇫🇷',
  'Math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ = ∫₀¹ f(t) dt ≈ 3.14159…',
  'Combining: e\u0301 a\u0308 n\u0303 \u1100\u1161\u11a8 Z\u0351\u0364\u036b',
  'Zero width: a\u200bb\u200cc\u200dd\ufeffe and NBSP:\u00a0|\u202f|\u3000|',
];

const CODE = [
  'def f(x):\n    return x**2  # square\n\tif x > 0: print(\'ok\')',
  '#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) x *= 2;\n  return v[0] == 2 ? 0 : 1;\n}\n',
  'const re = /^(?:[a-z0-9!#$%&\'*+/=?^_`{|}~-]+)@example\\.com$/i;\nconsole.log(`${a} => ${b}`);',
  '{"key": [1, 2.5e-3, null, true], "nested": {"x": "y\\n"}}',
  '<html><body><table><tr><td><b>bold</b></td></tr></table></body></html>',
  'SELECT id, name FROM users WHERE age >= 21 AND name LIKE \'%son\' ORDER BY id DESC;',
  'for i in $(seq 1 10); do echo "$i" | sed -e \'s/1/one/\' >> /tmp/out.txt; done',
  '    indented code();\n\t\ttabbed();\r\n  mixed\t \tspace();',
  'fn main() -> Result<(), Box<dyn Error>> { let x: Vec<u8> = vec![0xFF; 16]; Ok(()) }',
];

const SPECIAL = [
  '<bos>', '<eos>', '<pad>', '<unk>', '<mask>', '[multimodal]', '<start_of_turn>', '<end_of_turn>',
  '<start_of_image>', '<end_of_image>', '<image_soft_token>', '<unused0>', '<unused40>', '<unused99>',
  '<unused6241>', '<table>', '</code>', '<b>', '<0x41>', '<0xFF>', '<bos', 'bos>', '<<bos>>',
  '<start_of_turn', '<|turn>', '<turn|>', '<|channel>', '<channel|>', '<|tool_call>', '<|"|>',
  '<|think|>', '<|image|>',
];

const WORDS = ['the', 'of', 'and', 'to', 'in', 'is', 'you', 'that', 'it', 'he', 'was', 'for',
  'on', 'are', 'as', 'with', 'his', 'they', 'at', 'be', 'this', 'have', 'from', 'or', 'one',
  'had', 'by', 'word', 'but', 'not', 'what', 'all', 'were', 'we', 'when', 'your', 'can', 'said',
  'tokenizer', 'inference', 'Gemma', 'transformer', 'unbelievably', 'antidisestablishmentarianism'];

// Code point ranges to draw random text from (surrogates excluded: not valid in UTF-8).
const RANGES = [
  [0x20, 0x7e, 30], [0x09, 0x0d, 4], [0xa0, 0x24f, 6], [0x370, 0x52f, 4], [0x590, 0x6ff, 3],
  [0x900, 0xdff, 3], [0xe00, 0xe7f, 2], [0x1100, 0x11ff, 2], [0x2000, 0x2bff, 4],
  [0x3000, 0x30ff, 3], [0x4e00, 0x9fff, 6], [0xac00, 0xd7a3, 3], [0xe000, 0xf8ff, 1],
  [0xfb00, 0xfffd, 2], [0x10000, 0x1ffff, 3], [0x1f300, 0x1faff, 6], [0x20000, 0x2ffff, 2],
  [0x30000, 0x10ffff, 2],
];

function pick(r, xs) { return xs[Math.floor(r() * xs.length)]; }
function int(r, lo, hi) { return lo + Math.floor(r() * (hi - lo + 1)); }

function randomCodePoint(r) {
  let total = 0;
  for (const [, , w] of RANGES) total += w;
  let x = r() * total;
  for (const [lo, hi, w] of RANGES) {
    if ((x -= w) < 0) return int(r, lo, hi);
  }
  return 0x41;
}

function randomUnicode(r, n) {
  let s = '';
  for (let i = 0; i < n; ++i) s += String.fromCodePoint(randomCodePoint(r));
  return s;
}

function whitespaceRun(r) {
  const ws = [' ', '\n', '\t', '\r\n', '\r', '\u00a0', '\u3000', '  ', '\n\n'];
  let s = '';
  for (let i = int(r, 1, 12); i > 0; --i) s += pick(r, ws).repeat(int(r, 1, 40));
  return s;
}

function number(r) {
  switch (int(r, 0, 5)) {
    case 0: return String(int(r, 0, 1e9));
    case 1: return (r() * 1e6).toFixed(int(r, 0, 8));
    case 2: return `${int(r, 1900, 2100)}-${String(int(r, 1, 12)).padStart(2, '0')}-${String(int(r, 1, 28)).padStart(2, '0')}`;
    case 3: return int(r, 0, 1e6).toLocaleString('en-US');
    case 4: return '9'.repeat(int(r, 1, 60));
    default: return `+1 (${int(r, 200, 999)}) ${int(r, 200, 999)}-${int(r, 1000, 9999)}`;
  }
}

function url(r) {
  const host = pick(r, ['example.com', 'ai.google.dev', 'huggingface.co', 'localhost:8080', '127.0.0.1', 'xn--bcher-kva.de']);
  const path = Array.from({ length: int(r, 0, 4) }, () => pick(r, WORDS)).join('/');
  const q = r() < 0.5 ? `?q=${encodeURIComponent(Array.from(pick(r, SENTENCES)).slice(0, 20).join(''))}&page=${int(r, 1, 99)}#frag` : '';
  return `${pick(r, ['https', 'http', 'ftp'])}://${host}/${path}${q}` +
      (r() < 0.3 ? ` mailto:${pick(r, WORDS)}.${pick(r, WORDS)}@${host}` : '');
}

function prose(r, words) {
  let s = '';
  for (let i = 0; i < words; ++i) {
    let w = pick(r, WORDS);
    if (r() < 0.1) w = w[0].toUpperCase() + w.slice(1);
    s += (i ? ' ' : '') + w + (r() < 0.08 ? pick(r, [',', '.', ';', '!', '?', ':']) : '');
    if (r() < 0.02) s += '\n';
    if (r() < 0.005) s += '\n\n';
  }
  return s;
}

function fragment(r) {
  switch (int(r, 0, 8)) {
    case 0: return pick(r, SENTENCES);
    case 1: return pick(r, CODE);
    case 2: return pick(r, SPECIAL);
    case 3: return whitespaceRun(r);
    case 4: return number(r);
    case 5: return url(r);
    case 6: return randomUnicode(r, int(r, 1, 20));
    case 7: return prose(r, int(r, 1, 30));
    default: return pick(r, [' ', '\n', '\t', '▁', '"', "'", '<', '>', '|']);
  }
}

// About 3,000 strings, plus a few long ones.
export function makeCorpus(seed = 20240601) {
  const r = rng(seed);
  const out = [
    // formats.md §4.2 strings.
    'Hello, world! The quick brown fox jumps over the lazy dog.',
    '  leading spaces,\ttab,   triple   spaces\n\nnewlines  trailing  ',
    'Digits: 1234567890 3.14159 1,000,000 2024-06-01',
    '', ' ', 'Hello', ' Hello', 'hello world', '<bos>Hello,', 'The capital of France is', ' Paris.\n',
    'Hello world! Café déjà vu — 123 😊', 'a\r\nb', 'x' + ' '.repeat(40) + 'y',
    '\u{10FFFF}\uE000 \u{1F9EC}\u{20000}', 'a\n\n\n\nb', 'literal ▁ char',
    '<table><b>bold</b></table>', '<unused0> is not special',
    '<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n',
    ...SENTENCES, ...CODE, ...SPECIAL,
  ];
  for (let n = 1; n <= 80; ++n) {
    out.push(' '.repeat(n), '\n'.repeat(n), '\t'.repeat(n), 'x' + ' '.repeat(n) + 'y',
             'a' + '\n'.repeat(n) + 'b', '\t'.repeat(n) + 'if', ' \n'.repeat(n), '>' + ' '.repeat(n) + '</');
  }
  for (let i = 0; i < 300; ++i) out.push(number(r));
  for (let i = 0; i < 200; ++i) out.push(url(r));
  for (let i = 0; i < 200; ++i) out.push(whitespaceRun(r));
  for (let i = 0; i < 500; ++i) out.push(randomUnicode(r, int(r, 1, 300)));
  for (let i = 0; i < 300; ++i) out.push(prose(r, int(r, 1, 200)));
  for (let i = 0; i < 300; ++i) {
    let s = '';
    for (let k = int(r, 2, 12); k > 0; --k) s += pick(r, SPECIAL) + pick(r, ['', ' ', '\n', 'x']);
    out.push(s);
  }
  for (let i = 0; i < 900; ++i) {
    let s = '';
    for (let k = int(r, 1, 10); k > 0; --k) s += fragment(r);
    out.push(s);
  }
  // Long inputs: a long document, a long single line, long runs, many emoji.
  out.push(prose(r, 40000));
  out.push(prose(r, 20000).replace(/\n/g, ' '));
  out.push(' '.repeat(20000), '\n'.repeat(10000), '\t'.repeat(5000), '🙂'.repeat(3000));
  out.push(randomUnicode(r, 30000));
  return out;
}
