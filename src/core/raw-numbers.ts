// Numbers a request body holds that JavaScript's numbers would change (docs/translation.md "Numbers in a request
// body"): an integer past 2^53 (a `seed` of 9007199254740993, a schema's `maximum` of 2^64-1) and `-0`. The body's
// values keep the nearest number, which every check reads; the literal as the client wrote it is kept beside its
// holder (object or array) and key, and the serialiser (wire/json-stream.ts) writes it back where the value is still
// the one parsed (a value the gateway changed, a clamped max_tokens, is written anew).
//
// Only bodies that hold such a number pay anything: the parser's walk of the values (json-body.ts, there before for
// Infinity) says so; an ordinary body is parsed and written exactly as before.

import { randomBytes } from 'node:crypto';

export interface RawNumber {
  /** The literal as the client wrote it. */
  readonly text: string;
  /** The number JSON.parse gives for it (what the body's value is while the gateway has not changed it). */
  readonly value: number;
}

const byHolder = new WeakMap<object, Map<string, RawNumber>>();
/** The bodies (roots) whose tree holds kept literals: only these are serialised with the lookups. */
const roots = new WeakSet<object>();

const TWO_53 = 2 ** 53;
const LONG_RUN = /\d{16}/;
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** Whether the JSON number literal `text` is -0 or past 2^53 and would be written back as another number. */
function isLossy(text: string): boolean {
  if (!JSON_NUMBER.test(text)) return false; // not a JSON number: JSON.parse refuses the body
  const value = Number(text);
  if (Object.is(value, -0)) return true;
  return Number.isFinite(value) && Math.abs(value) >= TWO_53 && LONG_RUN.test(text) && JSON.stringify(value) !== text;
}

// The placeholder of the n-th kept literal in the text handed to JSON.parse: a string no client can write, as it
// holds this process's random nonce (a client string that happened to hold it would still be a string: see revive).
const NONCE = randomBytes(16).toString('hex');
const PLACEHOLDER = `\u0000tollgate-number-${NONCE}-`;
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER).slice(1, -1);

/**
 * The text with each lossy number literal outside strings replaced by a placeholder string, and `restore`, which puts
 * the numbers back into the value JSON.parse made of it and keeps their literals (true when it kept any); null when
 * the text holds none, or more than `most`.
 */
export function losslessParse(text: string, most = Infinity): { text: string; restore: (value: unknown) => boolean } | null {
  const raws: RawNumber[] = [];
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: to its closing quote, one not escaped by an odd run of backslashes
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return null; // unterminated: JSON.parse will say so
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
        if (slashes % 2 === 0) break;
      }
      i = end;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++;
      const literal = text.slice(i, j);
      if (isLossy(literal)) {
        if (raws.length >= most) return null; // more than the caller keeps: none kept
        parts.push(text.slice(from, i), `"${PLACEHOLDER_JSON}${raws.length}"`);
        raws.push({ text: literal, value: Number(literal) });
        from = j;
      }
      i = j - 1;
    }
  }
  if (raws.length === 0) return null;
  parts.push(text.slice(from));
  return { text: parts.join(''), restore: (value) => restore(value, raws) };
}

/** The number of a placeholder string, or undefined for any other value. */
function placeholderOf(v: unknown, raws: readonly RawNumber[]): RawNumber | undefined {
  if (typeof v !== 'string' || !v.startsWith(PLACEHOLDER)) return undefined;
  const n = v.slice(PLACEHOLDER.length);
  return /^\d+$/.test(n) ? raws[Number(n)] : undefined;
}

/** Put the kept numbers in place of their placeholders in `value`. A loop, not recursion: a body may nest 10,000 deep. */
function restore(value: unknown, raws: readonly RawNumber[]): boolean {
  let kept = false;
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const x = todo.pop();
    if (x === null || typeof x !== 'object') continue;
    const keys = Array.isArray(x) ? null : Object.keys(x);
    const n = keys === null ? (x as unknown[]).length : keys.length;
    for (let i = 0; i < n; i++) {
      const key = keys === null ? String(i) : keys[i]!;
      const v = (x as Record<string, unknown>)[key];
      const raw = placeholderOf(v, raws);
      if (raw === undefined) {
        if (v !== null && typeof v === 'object') todo.push(v);
        continue;
      }
      (x as Record<string, unknown>)[key] = raw.value;
      keepRawNumber(x, key, raw);
      kept = true;
    }
  }
  return kept;
}

const isNumberChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2b || c === 0x2d || c === 0x65 || c === 0x45;

function keepRawNumber(holder: object, key: string, raw: RawNumber): void {
  let m = byHolder.get(holder);
  if (m === undefined) byHolder.set(holder, (m = new Map()));
  m.set(key, raw);
}

/** Mark `root` as a body whose tree holds kept literals (the parser's, or a body built from such a body's parts). */
export function markRawNumbers(root: object): void {
  roots.add(root);
}

/** Whether `root` was marked: its serialisation looks the literals up. */
export function holdsRawNumbers(root: unknown): boolean {
  return typeof root === 'object' && root !== null && roots.has(root);
}

/** The literal to write for `value` at `holder[key]`, when it is one kept and the value is still the one parsed. */
export function rawNumberText(holder: object, key: string, value: number): string | undefined {
  const raw = byHolder.get(holder)?.get(key);
  return raw !== undefined && Object.is(raw.value, value) ? raw.text : undefined;
}

/** `to`, a shallow copy of the body `from` (its own keys), takes `from`'s mark and its top-level kept literals. */
export function carryRawNumbers(from: unknown, to: object): void {
  if (!holdsRawNumbers(from)) return;
  roots.add(to);
  const m = byHolder.get(from as object);
  if (m !== undefined) byHolder.set(to, new Map(m));
}
