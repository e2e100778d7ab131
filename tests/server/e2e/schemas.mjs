// The JSON Schemas the structured-output tests hold answers to (structured.test.mjs on the tiny
// random-weight model, real_structured.test.mjs on Gemma 3 270M): over every keyword g4's
// grammar supports (docs/structured-output.md) and nothing else. Strings and arrays are mostly
// bounded (maxLength, maxItems) so that random-weight models finish; a few are left open on
// purpose (open_string, open_array, free keys, unbounded recursion). Each schema is compiled by ajv in
// strict mode when this module loads, so a typo in a keyword fails every test that imports it.
import Ajv from 'ajv';

const str = (max = 12, extra = {}) => ({ type: 'string', maxLength: max, ...extra });
const int = (minimum, maximum) => ({ type: 'integer', minimum, maximum });
const obj = (properties, required = Object.keys(properties), extra = {}) =>
  ({ type: 'object', properties, required, additionalProperties: false, ...extra });
const arr = (items, maxItems, minItems = 0) => ({ type: 'array', items, minItems, maxItems });

export const SCHEMAS = [
  // Scalars.
  ['boolean', { type: 'boolean' }],
  ['null', { type: 'null' }],
  ['integer', { type: 'integer' }],
  ['integer_range', int(-20, 20)],
  ['integer_negative_range', int(-1000, -990)],
  ['integer_single_value', int(5, 5)],
  ['integer_wide_range', int(-1000000, 1000000)],
  ['integer_exclusive', { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 }],
  ['integer_minimum_only', { type: 'integer', minimum: 100 }],
  ['number', { type: 'number' }],
  ['short_string', str(10)],
  ['string_min_max', str(6, { minLength: 3 })],
  ['string_exact_length', str(4, { minLength: 4 })],  // code points, not bytes or UTF-16 units
  ['string_empty', str(0)],
  // Enums and consts, unicode and escapes included.
  ['enum_strings', { enum: ['red', 'green', 'blue'] }],
  ['enum_mixed', { enum: ['a', 1, true, null] }],
  ['enum_numbers', { enum: [1.5, 2, -3, 1e3] }],
  ['enum_prefixes', { enum: ['a', 'ab', 'abc'] }],  // one value a prefix of another
  ['const_unicode', { const: 'café 日本' }],
  ['enum_unicode', { enum: ['naïve', 'Ελληνικά', '中文', 'emoji 🙂'] }],
  ['enum_escapes', { enum: ['say "hi"', 'back\\slash', 'new\nline', 'tab\there', '\u0001'] }],
  ['const_number', { const: 42 }],
  ['const_empty_string', { const: '' }],
  ['const_object', { const: { a: [1, 2], b: 'x' } }],
  // Unions of types, nullable.
  ['type_array', { type: ['string', 'integer'], maxLength: 8 }],
  ['type_array_three', { type: ['integer', 'boolean', 'null'] }],
  ['nullable_string', { type: ['string', 'null'], maxLength: 8 }],
  ['nullable_keyword', { type: 'string', maxLength: 5, nullable: true }],
  // Objects.
  ['flat_object', obj({ name: str(), age: int(0, 120) })],
  ['person', obj({ name: str(16), age: int(0, 130), email: str(20), active: { type: 'boolean' } })],
  ['optional_props', obj({ id: int(1, 999), note: str(8) }, ['id'])],
  ['no_required', obj({ a: { type: 'boolean' }, b: { type: 'null' } }, [])],
  ['empty_object', { type: 'object', additionalProperties: false }],
  ['nested_object', obj({ user: obj({ id: int(1, 99), tags: arr(str(5), 2) }) })],
  ['deep_nesting', obj({ a: obj({ b: obj({ c: obj({ d: { type: 'boolean' } }) }) }) })],
  ['enum_in_object', obj({ size: { enum: ['S', 'M', 'L', 'XL'] }, qty: int(1, 5) })],
  ['string_escapes', obj({ quote: { const: 'say "hi"\n\ttab \\ slash' } })],
  ['unicode_keys', obj({ 'größe': int(1, 3), 'ключ': { type: 'boolean' }, '日本': str(4) })],
  ['long_key_names', obj({ a_rather_long_property_name: { type: 'boolean' }, another_one_here: { type: 'null' } })],
  ['many_props', obj(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i}`, int(0, 9)])))],
  ['mixed_types_object', obj({ s: str(5), i: int(-5, 5), n: { type: 'number' }, b: { type: 'boolean' }, z: { type: 'null' } })],
  ['nullable_fields', obj({ a: { type: ['integer', 'null'] }, b: { type: ['boolean', 'null'] } })],
  ['tuple_like_object', obj({ first: str(3), second: int(0, 9), third: { type: 'boolean' } })],
  ['declared_plus_additional', obj({ id: int(0, 9), tag: str(4) }, ['id'], { additionalProperties: int(0, 9) })],
  ['declared_plus_additional_true', obj({ ok: { type: 'boolean' } }, ['ok'], { additionalProperties: true })],
  ['additional_schema_map', { type: 'object', additionalProperties: int(0, 9) }],
  ['string_map', { type: 'object', additionalProperties: str(6) }],
  ['free_object', { type: 'object' }],
  ['annotations', { title: 'T', description: 'D', $schema: 'http://json-schema.org/draft-07/schema#',
                    $comment: 'ignored', ...obj({ a: { type: 'boolean', description: 'flag', default: false, examples: [true] } }) }],
  ['all_of_one', { allOf: [obj({ ok: { type: 'boolean' } })] }],
  // Arrays.
  ['array_of_ints', arr(int(0, 9), 5)],
  ['array_min_max', arr({ type: 'boolean' }, 3, 2)],
  ['array_exact', arr({ enum: ['x', 'y'] }, 3, 3)],
  ['array_of_objects', arr(obj({ k: str(4), v: int(0, 5) }), 3)],
  ['array_nested', arr(arr(int(0, 3), 2), 2)],
  ['array_untyped_items', { type: 'array', maxItems: 0 }],
  ['array_of_enums', arr({ enum: ['up', 'down'] }, 4, 1)],
  ['array_unicode_enum', arr({ enum: ['café', '日本', 'Ünïcödé', '🙂'] }, 3, 1)],
  ['array_any_of_items', arr({ anyOf: [int(0, 9), { type: 'boolean' }, { type: 'null' }] }, 4)],
  ['array_nullable_strings', arr({ type: ['string', 'null'], maxLength: 3 }, 3, 1)],
  // anyOf / oneOf (oneOf branches kept disjoint: distinct types or const discriminators).
  ['any_of_types', { anyOf: [{ type: 'integer' }, { type: 'boolean' }, str(5)] }],
  ['any_of_objects', { anyOf: [obj({ kind: { const: 'circle' }, r: int(1, 9) }),
                               obj({ kind: { const: 'square' }, side: int(1, 9) })] }],
  ['any_of_null_object', { anyOf: [{ type: 'null' }, obj({ x: int(0, 9) })] }],
  ['one_of_discriminated', { oneOf: [obj({ type: { const: 'a' }, x: int(0, 1) }),
                                     obj({ type: { const: 'b' }, y: { type: 'boolean' } })] }],
  ['one_of_types', { oneOf: [{ type: 'null' }, int(0, 100)] }],
  ['one_of_array_or_string', { oneOf: [arr(int(0, 9), 2), str(3)] }],
  ['one_of_three_shapes', { oneOf: [
    obj({ shape: { const: 'point' } }),
    obj({ shape: { const: 'line' }, len: int(1, 9) }),
    obj({ shape: { const: 'poly' }, sides: arr(int(1, 9), 4, 3) })] }],
  // $defs / definitions / $ref, recursion.
  ['defs_ref', { $defs: { point: obj({ x: int(-9, 9), y: int(-9, 9) }) },
                 ...obj({ from: { $ref: '#/$defs/point' }, to: { $ref: '#/$defs/point' } }) }],
  ['definitions_ref', { definitions: { color: { enum: ['c', 'm', 'y', 'k'] } },
                        ...arr({ $ref: '#/definitions/color' }, 4) }],
  ['ref_chain', { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/c' }, c: int(0, 3) },
                  ...obj({ v: { $ref: '#/$defs/a' } }) }],
  ['recursive_tree', { $defs: { node: obj({ v: int(0, 9), kids: arr({ $ref: '#/$defs/node' }, 2) }, ['v']) },
                       $ref: '#/$defs/node' }],
  ['recursive_list', { $defs: { cell: { anyOf: [{ type: 'null' }, obj({ head: int(0, 9), tail: { $ref: '#/$defs/cell' } })] } },
                       $ref: '#/$defs/cell' }],
  ['recursive_root_ref', obj({ name: str(3), child: { $ref: '#' } }, ['name'])],
  // Realistic shapes.
  ['event', obj({ title: str(20), day: int(1, 31), month: int(1, 12), year: int(1900, 2100),
                  attendees: arr(str(10), 3) })],
  ['address', obj({ street: str(20), city: str(12), zip: str(5, { minLength: 5 }), country: { enum: ['FR', 'DE', 'JP', 'US'] } })],
  ['product', obj({ sku: str(8), price_cents: int(0, 100000), in_stock: { type: 'boolean' },
                    variants: arr(obj({ color: str(6), size: { enum: ['S', 'M'] } }), 2) })],
  ['rating', obj({ stars: int(1, 5), comment: { type: ['string', 'null'], maxLength: 30 } })],
  ['order', obj({ id: int(1, 99999), lines: arr(obj({ sku: str(6), qty: int(1, 9) }), 3, 1),
                  status: { enum: ['new', 'paid', 'shipped'] }, note: { type: ['string', 'null'], maxLength: 10 } },
                ['id', 'lines', 'status'])],
  ['weather_report', obj({ city: { enum: ['Paris', 'Zürich', '東京', 'São Paulo'] }, temp_c: int(-50, 60),
                           conditions: arr({ enum: ['sun', 'rain', 'snow', 'wind'] }, 2, 1) })],
  ['config', obj({ version: { const: 1 }, flags: { type: 'object', additionalProperties: { type: 'boolean' }, properties: { debug: { type: 'boolean' } }, required: ['debug'] },
                   mode: { anyOf: [{ const: 'auto' }, int(1, 8)] } })],
  // Deliberately open: bounded only by max_tokens.
  ['open_string', { type: 'string' }],
  ['open_array', { type: 'array', items: { type: 'integer' } }],
];

// ajv as the tests use it. strictSchema: an unknown keyword (a typo) is an error; unions of
// types are allowed (type arrays are part of the subset).
export function makeAjv() {
  return new Ajv({ strictSchema: true, strictTypes: false, strictTuples: false,
                   strictRequired: true, allowUnionTypes: true, allErrors: true });
}

const ajv = makeAjv();
const VALIDATORS = new Map();
{
  const names = new Set();
  for (const [name, schema] of SCHEMAS) {
    if (names.has(name)) throw new Error(`schema ${name} twice`);
    names.add(name);
    try {
      VALIDATORS.set(name, ajv.compile(schema));
    } catch (e) {
      throw new Error(`schema ${name} does not compile: ${e.message}`);
    }
  }
}

// The compiled ajv validator of a schema of SCHEMAS, by name.
export function validatorOf(name) {
  return VALIDATORS.get(name);
}

// Every schema of SCHEMAS exactly once, as [name, schema], each a fresh plain-JSON copy.
export function schemaCorpus() {
  return SCHEMAS.map(([name, schema]) => [name, JSON.parse(JSON.stringify(schema))]);
}
