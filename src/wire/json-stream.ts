// JSON serialised as a sequence of Buffer chunks (~64 KiB each) instead of one string: the bytes are exactly
// JSON.stringify's (same key order, number forms, escapes, toJSON, undefined/function/symbol values dropped from
// objects and null in arrays, TypeError on a cycle or a BigInt), but a large body never exists as one more
// full-size string plus its Buffer. Pure and iterative: depth costs heap, never call stack.
//
// Long strings are escaped slice by slice with JSON.stringify; a slice never ends between the two halves of a
// surrogate pair, so a pair is never escaped as two lone surrogates.

import { holdsRawNumbers, rawNumberText } from '../core/raw-numbers.js';

const CHUNK_CHARS = 64 * 1024;
const SLICE_CHARS = 16 * 1024;

type Frame =
  | { readonly kind: 'array'; readonly value: readonly unknown[]; i: number }
  | { readonly kind: 'object'; readonly value: Record<string, unknown>; readonly keys: string[]; i: number; wrote: boolean }
  | { readonly kind: 'string'; readonly value: string; i: number };

/** What JSON.stringify would serialise for `value` under `key` (toJSON applied, boxed primitives unboxed). */
function prepare(holderKey: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (k: string) => unknown).call(value, holderKey);
  } else if (typeof value === 'bigint') {
    const toJSON = (BigInt.prototype as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (k: string) => unknown).call(value, holderKey);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean || value instanceof BigInt) return value.valueOf();
  return value;
}

/** True for the values JSON.stringify leaves out of an object (and writes as null in an array). */
const skipped = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** Where a number's own literal may be written instead of JSON.stringify's (raw-numbers.ts); undefined: the usual. */
export type NumberText = (holder: object, key: string, value: number) => string | undefined;

/**
 * The bytes of JSON.stringify(value), in chunks of about `chunkChars` characters (64 Ki by default); with
 * `numberText`, a number it gives a literal for is written as that literal.
 */
export function* jsonChunks(value: unknown, chunkChars = CHUNK_CHARS, numberText?: NumberText): Generator<Buffer, void, undefined> {
  const parts: string[] = [];
  let pending = 0;
  const put = (s: string): void => {
    parts.push(s);
    pending += s.length;
  };
  const take = (): Buffer => {
    const out = Buffer.from(parts.length === 1 ? parts[0]! : parts.join(''), 'utf8');
    parts.length = 0;
    pending = 0;
    return out;
  };

  const stack: Frame[] = [];
  const ancestors = new Set<object>();

  /** Write a prepared (not skipped) value at `holder[key]`, or open a frame for it. */
  const open = (v: unknown, holder: object | null, key: string): void => {
    if (typeof v === 'string') {
      if (v.length <= SLICE_CHARS) put(JSON.stringify(v));
      else {
        put('"');
        stack.push({ kind: 'string', value: v, i: 0 });
      }
      return;
    }
    if (typeof v === 'number' && numberText !== undefined && holder !== null) {
      const literal = numberText(holder, key, v);
      if (literal !== undefined) {
        put(literal);
        return;
      }
    }
    if (v === null || typeof v !== 'object') {
      // numbers (non-finite -> null, -0 -> 0), booleans, null; a BigInt throws as JSON.stringify does
      put(JSON.stringify(v) ?? 'null');
      return;
    }
    if (ancestors.has(v)) throw new TypeError('Converting circular structure to JSON');
    ancestors.add(v);
    if (Array.isArray(v)) {
      put('[');
      stack.push({ kind: 'array', value: v, i: 0 });
    } else {
      put('{');
      stack.push({ kind: 'object', value: v as Record<string, unknown>, keys: Object.keys(v), i: 0, wrote: false });
    }
  };

  const top = prepare('', value);
  if (skipped(top)) return;
  open(top, null, '');
  while (stack.length > 0) {
    if (pending >= chunkChars) yield take();
    const f = stack[stack.length - 1]!;
    if (f.kind === 'string') {
      if (f.i >= f.value.length) {
        put('"');
        stack.pop();
        continue;
      }
      let end = Math.min(f.i + SLICE_CHARS, f.value.length);
      // never end a slice on a high surrogate whose low half follows
      const last = f.value.charCodeAt(end - 1);
      if (end < f.value.length && last >= 0xd800 && last <= 0xdbff) {
        const next = f.value.charCodeAt(end);
        if (next >= 0xdc00 && next <= 0xdfff) end--;
      }
      const escaped = JSON.stringify(f.value.slice(f.i, end));
      put(escaped.slice(1, -1));
      f.i = end;
      continue;
    }
    if (f.kind === 'array') {
      if (f.i >= f.value.length) {
        put(']');
        ancestors.delete(f.value);
        stack.pop();
        continue;
      }
      const i = f.i++;
      if (i > 0) put(',');
      const key = String(i);
      const v = prepare(key, f.value[i]);
      if (skipped(v)) put('null');
      else open(v, f.value, key);
      continue;
    }
    if (f.i >= f.keys.length) {
      put('}');
      ancestors.delete(f.value);
      stack.pop();
      continue;
    }
    const key = f.keys[f.i++]!;
    const v = prepare(key, f.value[key]);
    if (skipped(v)) continue;
    put(f.wrote ? `,${JSON.stringify(key)}:` : `${JSON.stringify(key)}:`);
    f.wrote = true;
    open(v, f.value, key);
  }
  if (pending > 0) yield take();
}

/** Below this many characters of strings (and a few per value), a body is serialised by JSON.stringify in one go. */
const SMALL_CHARS = 256 * 1024;

/** Deeper than this, a body takes the chunked path, which needs no call stack (JSON.stringify recurses). */
const SMALL_DEPTH = 256;

/**
 * Is `value` surely small: its strings' characters plus 8 per value under `limit`, nested at most `SMALL_DEPTH`? A
 * bounded walk that gives up at the limit (a cycle exhausts it too, and the chunked path reports the cycle). Escapes
 * are not counted: a string of control characters can grow sixfold, which still keeps a "small" body far from the
 * sizes the chunks are for.
 */
function surelySmall(value: unknown, limit: number): boolean {
  let budget = limit;
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop()!;
    budget -= 8;
    if (typeof v === 'string') budget -= v.length;
    else if (v !== null && typeof v === 'object') {
      if (depth >= SMALL_DEPTH) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          values.push(v[i]);
          depths.push(depth + 1);
        }
      } else {
        for (const k of Object.keys(v)) {
          budget -= k.length;
          values.push((v as Record<string, unknown>)[k]);
          depths.push(depth + 1);
        }
      }
    }
    if (budget < 0) return false;
  }
  return true;
}

/**
 * A request body for undici: one Buffer when the JSON fits in one chunk (sent with a content-length, as before),
 * else an iterable of chunks (sent chunked). Serialisation errors (a cycle) surface here, before any byte is sent.
 * A body that is surely small (every chat request but those carrying images or long documents) is serialised by
 * JSON.stringify, which is about twice as fast as the chunked serialiser and gives the same bytes.
 */
export function jsonBody(value: unknown): Buffer | Iterable<Buffer> {
  // A body holding numbers kept as the client wrote them (past 2^53, -0): the chunked serialiser writes them back.
  const numberText = holdsRawNumbers(value) ? rawNumberText : undefined;
  if (numberText === undefined && surelySmall(value, SMALL_CHARS)) {
    const text = JSON.stringify(value);
    return text === undefined ? Buffer.alloc(0) : Buffer.from(text, 'utf8');
  }
  const chunks = jsonChunks(value, CHUNK_CHARS, numberText);
  const first = chunks.next();
  if (first.done) return Buffer.alloc(0);
  const second = chunks.next();
  if (second.done) return first.value;
  return (function* rest(): Generator<Buffer, void, undefined> {
    yield first.value;
    yield second.value;
    yield* chunks;
  })();
}
