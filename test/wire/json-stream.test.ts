// The streaming serialiser (src/wire/json-stream.ts) against JSON.stringify: a table of edge cases and a
// seeded generator of random values (fast-check is not a dependency), each checked at several chunk sizes, so
// that every chunk and slice boundary falls somewhere different.

import t, { type Test } from 'tap';
import { jsonBody, jsonChunks } from '../../src/wire/json-stream.js';

const text = (v: unknown, chunkChars?: number) => Buffer.concat([...jsonChunks(v, chunkChars)]).toString('utf8');

function same(t: Test, v: unknown, name: string): void {
  const want = JSON.stringify(v);
  for (const size of [1, 7, 4096, undefined]) {
    if (want === undefined) t.equal(text(v, size), '', `${name} (chunks of ${size ?? 'default'}): nothing, as JSON.stringify gives undefined`);
    else t.equal(text(v, size), want, `${name} (chunks of ${size ?? 'default'})`);
  }
}

const long = 'a'.repeat(16 * 1024 - 1);
const CASES: [string, unknown][] = [
  ['null', null], ['true', true], ['false', false], ['zero', 0], ['-0', -0], ['1e21', 1e21], ['1e-7', 1e-7],
  ['max', Number.MAX_VALUE], ['min', Number.MIN_VALUE], ['NaN', NaN], ['Infinity', -Infinity], ['int', -42],
  ['empty string', ''], ['empty array', []], ['empty object', {}],
  ['unicode', 'héllo 日本語 🎉 emoji'], ['control chars', '\u0000\u0001\b\f\n\r\t\u001f\u007f"\\/'],
  ['lone high surrogate', 'a\ud800b'], ['lone low surrogate', '\udc00'], ['reversed pair', '\udc00\ud800'],
  ['U+2028/2029', '\u2028\u2029'],
  ['pair across a slice boundary', `${long}\ud83c\udf89${long}`],
  ['lone high at a slice boundary', `${long}\ud800${long}`],
  ['lone low after a slice boundary', `${long}a\udc00`],
  ['long escapes', '\n"\\'.repeat(40_000)],
  ['long string key', { [long + '"k']: long }],
  ['undefined values dropped', { a: undefined, b: 1, c: () => 1, d: Symbol('s'), e: null }],
  ['only undefined values', { a: undefined }],
  ['undefined in arrays is null', [undefined, () => 1, Symbol('s'), 1]],
  ['holes', [1, , 3]], // eslint-disable-line no-sparse-arrays
  ['top-level undefined', undefined], ['top-level function', () => 1],
  ['nested', { a: [1, { b: [[], {}, [[[{ c: 'd' }]]]] }], e: { f: { g: {} } } }],
  ['key order with integer keys', { b: 1, 2: 'two', a: 2, 1: 'one', '-1': 'neg' }],
  ['toJSON', { d: new Date(0), custom: { toJSON: (k: string) => `key:${k}` }, arr: [{ toJSON: (k: string) => k }] }],
  ['boxed primitives', [Object(1), Object('s'), Object(false)]],
  ['deep array', JSON.parse(`${'['.repeat(1000)}${']'.repeat(1000)}`)],
  ['deep object', JSON.parse(`${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`)],
  ['chat body', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(200_000) }], stream: true, max_tokens: undefined }],
];

t.test('byte-identical to JSON.stringify: edge cases', async (t) => {
  for (const [name, v] of CASES) same(t, v, name);
});

t.test('iterative: nesting deeper than JSON.stringify can go costs no call stack', async (t) => {
  let v: unknown = 1;
  for (let i = 0; i < 100_000; i++) v = { a: [v] };
  t.throws(() => JSON.stringify(v), RangeError, 'JSON.stringify overflows the stack');
  t.equal(text(v), `${'{"a":['.repeat(100_000)}1${']}'.repeat(100_000)}`);
});

t.test('cycles and BigInt throw as JSON.stringify does', async (t) => {
  const cyc: Record<string, unknown> = { a: 1 };
  cyc.self = { back: cyc };
  t.throws(() => text(cyc), TypeError);
  t.throws(() => text({ n: 1n }), TypeError);
  const shared = { x: 1 };
  t.equal(text({ a: shared, b: [shared] }), JSON.stringify({ a: shared, b: [shared] }), 'a shared object that is not a cycle is fine');
});

/** A small deterministic PRNG (mulberry32), so a failure is reproducible from its seed. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function randomString(r: () => number): string {
  const n = r() < 0.05 ? Math.floor(r() * 40_000) : Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.6) s += String.fromCharCode(0x20 + Math.floor(r() * 95));
    else if (k < 0.7) s += String.fromCharCode(Math.floor(r() * 0x20));
    else if (k < 0.8) s += String.fromCharCode(0xd800 + Math.floor(r() * 0x800)); // surrogates, paired or not
    else if (k < 0.9) s += '\ud83d\ude00';
    else s += String.fromCharCode(Math.floor(r() * 0x10000));
  }
  return s;
}

function randomValue(r: () => number, depth: number): unknown {
  const k = r();
  if (depth > 6 || k < 0.45) {
    const p = r();
    if (p < 0.35) return randomString(r);
    if (p < 0.55) return (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20);
    if (p < 0.65) return Math.floor(r() * 1000);
    if (p < 0.72) return [NaN, Infinity, -0, 1e21, 5e-324][Math.floor(r() * 5)];
    if (p < 0.8) return r() < 0.5;
    if (p < 0.9) return null;
    return undefined;
  }
  const n = Math.floor(r() * 6);
  if (k < 0.7) return Array.from({ length: n }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) o[r() < 0.2 ? String(Math.floor(r() * 10)) : randomString(r)] = randomValue(r, depth + 1);
  return o;
}

t.test('byte-identical to JSON.stringify: 400 random values', async (t) => {
  let failures = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const v = randomValue(rng(seed), 0);
    const want = JSON.stringify(v) ?? '';
    for (const size of [3, 1000, undefined]) {
      if (text(v, size) !== want) {
        failures++;
        t.fail(`seed ${seed}, chunks of ${size ?? 'default'}: differs from JSON.stringify`);
      }
    }
  }
  t.equal(failures, 0);
});

t.test('jsonBody: one Buffer for a small body, ~64 KiB chunks for a large one', async (t) => {
  const small = jsonBody({ model: 'm', messages: [] });
  t.ok(Buffer.isBuffer(small));
  t.equal(small.toString(), '{"model":"m","messages":[]}');
  const big = { model: 'm', messages: [{ role: 'user', content: 'é'.repeat(1_000_000) }] };
  const out = jsonBody(big);
  t.notOk(Buffer.isBuffer(out));
  const chunks = [...(out as Iterable<Buffer>)];
  t.ok(chunks.length > 10);
  t.ok(chunks.every((c) => c.length <= 3 * 80 * 1024), 'no chunk is the whole body');
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify(big));
});

t.test('jsonBody: up to 256 KiB of text one Buffer from JSON.stringify; deep or cyclic values take the chunked path', async (t) => {
  const mid = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(200 * 1024) }] };
  const one = jsonBody(mid);
  t.ok(Buffer.isBuffer(one), '200 KiB: one Buffer (sent with a content-length)');
  t.equal((one as Buffer).toString(), JSON.stringify(mid));
  const over = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300 * 1024) }] };
  t.notOk(Buffer.isBuffer(jsonBody(over)), '300 KiB: chunks');
  let deep: unknown = 'leaf';
  for (let i = 0; i < 20_000; i++) deep = [deep];
  // Nested deeper than JSON.stringify can recurse (small, but only the chunked serialiser needs no call stack).
  t.throws(() => JSON.stringify(deep), RangeError, '(JSON.stringify itself overflows at this depth)');
  const nested = jsonBody({ model: 'm', deep });
  const bytes = Buffer.isBuffer(nested) ? nested : Buffer.concat([...nested]);
  t.equal(bytes.toString(), `{"model":"m","deep":${'['.repeat(20_000)}"leaf"${']'.repeat(20_000)}}`, 'nested 20,000 deep: the same bytes, no stack overflow');
  let deeper: unknown = 'leaf';
  for (let i = 0; i < 200_000; i++) deeper = [deeper];
  const out = jsonBody({ deeper });
  t.equal((Buffer.isBuffer(out) ? out : Buffer.concat([...out])).length, 200_000 * 2 + 6 + 11, 'nested 200,000 deep: serialised');
  const cyclic: Record<string, unknown> = { model: 'm' };
  cyclic.self = cyclic;
  t.throws(() => [...(jsonBody(cyclic) as Iterable<Buffer>)], TypeError, 'a cycle throws as JSON.stringify does');
  t.same(jsonBody(undefined), Buffer.alloc(0), 'undefined: an empty body');
  const withToJSON = { at: new Date(0), n: Object(5) as number, skip: undefined, f: () => 1 };
  t.equal((jsonBody(withToJSON) as Buffer).toString(), JSON.stringify(withToJSON), 'toJSON, boxed values, skipped values as JSON.stringify');
});
