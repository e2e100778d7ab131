// The JSON Schemas the structured-output tests hold answers to (structured.test.mjs): 56 of
// them, over every keyword g4's grammar supports (docs/structured-output.md). Strings and
// arrays are mostly bounded so that random-weight models finish; a few are left open on purpose.
const str = (max = 12, extra = {}) => ({ type: 'string', maxLength: max, ...extra });
const int = (minimum, maximum) => ({ type: 'integer', minimum, maximum });
const obj = (properties, required = Object.keys(properties), extra = {}) =>
  ({ type: 'object', properties, required, additionalProperties: false, ...extra });

export const SCHEMAS = [
  ['boolean', { type: 'boolean' }],
  ['null', { type: 'null' }],
  ['integer', { type: 'integer' }],
  ['integer_range', int(-20, 20)],
  ['integer_exclusive', { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 }],
  ['number', { type: 'number' }],
  ['short_string', str(10)],
  ['string_min_max', str(6, { minLength: 3 })],
  ['enum_strings', { enum: ['red', 'green', 'blue'] }],
  ['enum_mixed', { enum: ['a', 1, true, null] }],
  ['const_unicode', { const: 'café 日本' }],
  ['enum_unicode', { enum: ['naïve', 'Ελληνικά', '中文', 'emoji 🙂'] }],
  ['type_array', { type: ['string', 'integer'], maxLength: 8 }],
  ['nullable_string', { type: ['string', 'null'], maxLength: 8 }],
  ['flat_object', obj({ name: str(), age: int(0, 120) })],
  ['person', obj({ name: str(16), age: int(0, 130), email: str(20), active: { type: 'boolean' } })],
  ['optional_props', obj({ id: int(1, 999), note: str(8) }, ['id'])],
  ['no_required', obj({ a: { type: 'boolean' }, b: { type: 'null' } }, [])],
  ['empty_object', { type: 'object', additionalProperties: false }],
  ['nested_object', obj({ user: obj({ id: int(1, 99), tags: { type: 'array', items: str(5), maxItems: 2 } }) })],
  ['deep_nesting', obj({ a: obj({ b: obj({ c: obj({ d: { type: 'boolean' } }) }) }) })],
  ['array_of_ints', { type: 'array', items: int(0, 9), maxItems: 5 }],
  ['array_min_max', { type: 'array', items: { type: 'boolean' }, minItems: 2, maxItems: 3 }],
  ['array_exact', { type: 'array', items: { enum: ['x', 'y'] }, minItems: 3, maxItems: 3 }],
  ['array_of_objects', { type: 'array', items: obj({ k: str(4), v: int(0, 5) }), maxItems: 3 }],
  ['array_nested', { type: 'array', items: { type: 'array', items: int(0, 3), maxItems: 2 }, maxItems: 2 }],
  ['array_untyped_items', { type: 'array', maxItems: 0 }],
  ['any_of_types', { anyOf: [{ type: 'integer' }, { type: 'boolean' }, str(5)] }],
  ['any_of_objects', { anyOf: [obj({ kind: { const: 'circle' }, r: int(1, 9) }),
                               obj({ kind: { const: 'square' }, side: int(1, 9) })] }],
  ['one_of_discriminated', { oneOf: [obj({ type: { const: 'a' }, x: int(0, 1) }),
                                     obj({ type: { const: 'b' }, y: { type: 'boolean' } })] }],
  ['one_of_types', { oneOf: [{ type: 'null' }, int(0, 100)] }],
  ['defs_ref', { $defs: { point: obj({ x: int(-9, 9), y: int(-9, 9) }) },
                 ...obj({ from: { $ref: '#/$defs/point' }, to: { $ref: '#/$defs/point' } }) }],
  ['definitions_ref', { definitions: { color: { enum: ['c', 'm', 'y', 'k'] } },
                        type: 'array', items: { $ref: '#/definitions/color' }, maxItems: 4 }],
  ['recursive_tree', { $defs: { node: obj({ v: int(0, 9), kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } }, ['v']) },
                       $ref: '#/$defs/node' }],
  ['recursive_list', { $defs: { cell: { anyOf: [{ type: 'null' }, obj({ head: int(0, 9), tail: { $ref: '#/$defs/cell' } })] } },
                       $ref: '#/$defs/cell' }],
  ['additional_schema_map', { type: 'object', additionalProperties: int(0, 9) }],
  ['free_object', { type: 'object' }],
  ['annotations', { title: 'T', description: 'D', $schema: 'http://json-schema.org/draft-07/schema#',
                    ...obj({ a: { type: 'boolean', description: 'flag', default: false, examples: [true] } }) }],
  ['enum_in_object', obj({ size: { enum: ['S', 'M', 'L', 'XL'] }, qty: int(1, 5) })],
  ['const_number', { const: 42 }],
  ['const_object', { const: { a: [1, 2], b: 'x' } }],
  ['string_escapes', obj({ quote: { const: 'say "hi"\n\ttab \\ slash' } })],
  ['unicode_keys', obj({ 'größe': int(1, 3), 'ключ': { type: 'boolean' } })],
  ['long_key_names', obj({ a_rather_long_property_name: { type: 'boolean' }, another_one_here: { type: 'null' } })],
  ['many_props', obj(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i}`, int(0, 9)])))],
  ['mixed_types_object', obj({ s: str(5), i: int(-5, 5), n: { type: 'number' }, b: { type: 'boolean' }, z: { type: 'null' } })],
  ['nullable_fields', obj({ a: { type: ['integer', 'null'] }, b: { type: ['boolean', 'null'] } })],
  ['array_of_enums', { type: 'array', items: { enum: ['up', 'down'] }, minItems: 1, maxItems: 4 }],
  ['tuple_like_object', obj({ first: str(3), second: int(0, 9), third: { type: 'boolean' } })],
  ['event', obj({ title: str(20), day: int(1, 31), month: int(1, 12), year: int(1900, 2100),
                  attendees: { type: 'array', items: str(10), maxItems: 3 } })],
  ['address', obj({ street: str(20), city: str(12), zip: str(5, { minLength: 5 }), country: { enum: ['FR', 'DE', 'JP', 'US'] } })],
  ['product', obj({ sku: str(8), price_cents: int(0, 100000), in_stock: { type: 'boolean' },
                    variants: { type: 'array', items: obj({ color: str(6), size: { enum: ['S', 'M'] } }), maxItems: 2 } })],
  ['rating', obj({ stars: int(1, 5), comment: { type: ['string', 'null'], maxLength: 30 } })],
  ['all_of_one', { allOf: [obj({ ok: { type: 'boolean' } })] }],
  ['open_string', { type: 'string' }],
  ['open_array', { type: 'array', items: { type: 'integer' } }],
];

// Every schema of SCHEMAS exactly once by name; undefined keys (a typo trap) removed.
export function schemaCorpus() {
  const names = new Set();
  for (const [name, schema] of SCHEMAS) {
    if (names.has(name)) throw new Error(`schema ${name} twice`);
    names.add(name);
    JSON.parse(JSON.stringify(schema));  // plain JSON only
  }
  return SCHEMAS.map(([name, schema]) => [name, JSON.parse(JSON.stringify(schema))]);
}
