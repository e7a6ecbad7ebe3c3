// The application/json body parser (replacing fastify's): the body is collected once into one Buffer (sized from
// content-length when the client sent one), its nesting depth is checked by one byte scan before JSON.parse, and
// the raw bytes are released as soon as they are decoded, so a large body is held at most twice (bytes + text,
// then text + parsed values) rather than as chunks, a joined copy, a text and the values at once.
//
// Kept from fastify's parser: the body limit (413), content-length checks, empty and invalid bodies (400
// TOLLGATE_ERR_INVALID_JSON, via fastify's own error codes that toTollgateError maps), a leading BOM, and
// prototype-poisoning protection (secure-json-parse, fastify's own: `__proto__`/`constructor` keys are refused).

import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorCodes } from 'fastify';
import secureJson from 'secure-json-parse';
import { TollgateError } from './errors.js';
import { losslessParse, markRawNumbers } from './raw-numbers.js';

export interface JsonBodyOptions {
  /** server.body_limit_bytes: more is 413. */
  readonly limit: number;
  /** server.json_max_depth, read per request (a live config edit applies): deeper is 400 TOLLGATE_ERR_BAD_REQUEST. */
  readonly maxDepth: () => number;
}

// Below this, bytes come from Node's shared pool and are not worth releasing early.
const RELEASE_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * The deepest nesting of arrays and objects in JSON bytes, stopping early once it passes `max`. Brackets inside
 * strings do not count; a string is skipped with indexOf (native) to its closing quote, one that is not escaped
 * by an odd run of backslashes. Not a validator: JSON.parse judges the syntax afterwards.
 */
export function jsonDepth(buf: Uint8Array, max = Infinity): number {
  let depth = 0;
  let deepest = 0;
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      let end = i;
      for (;;) {
        end = b.indexOf(QUOTE, end + 1);
        if (end < 0) return deepest; // unterminated: JSON.parse will say so
        let slashes = 0;
        while (b[end - 1 - slashes] === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return deepest;
}

/**
 * Give an owned Buffer's memory back now rather than at the next full GC: transferring its ArrayBuffer detaches it
 * (length 0), and the short-lived clone that now owns the bytes dies young, in the next scavenge.
 */
function release(buf: Buffer): void {
  const ab = buf.buffer;
  if (buf.byteLength < RELEASE_BYTES || buf.byteOffset !== 0 || ab.byteLength !== buf.byteLength || !(ab instanceof ArrayBuffer)) return;
  structuredClone(ab, { transfer: [ab] });
}

/** Collect the request body into one Buffer, enforcing the limit and the content-length as fastify does. */
function collect(payload: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(payload.headers['content-length']);
  if (declared > limit) return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  return new Promise((resolve, reject) => {
    // With a content-length the bytes go straight into one Buffer of that size; chunked bodies are joined at the end.
    const whole = Number.isInteger(declared) && declared >= RELEASE_BYTES ? Buffer.allocUnsafeSlow(declared) : null;
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (): void => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    function onData(chunk: Buffer | string): void {
      const c = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (received + c.length > limit || (whole !== null && received + c.length > whole.length)) {
        stop();
        if (whole !== null) release(whole);
        reject(received + c.length > limit ? new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE() : new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      if (whole !== null) c.copy(whole, received);
      else chunks.push(c);
      received += c.length;
    }
    function onEnd(err?: Error & { statusCode?: number }): void {
      stop();
      if (err != null) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        reject(err);
        return;
      }
      if (!Number.isNaN(declared) && received !== declared) {
        reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      resolve(whole ?? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)));
      chunks.length = 0;
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  });
}

/** Parse collected JSON bytes: depth first, then text, then values; `bytes` is released (detached) on the way. */
export function parseJsonBody(bytes: Buffer, maxDepth: number): unknown {
  if (bytes.length === 0) throw new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY();
  if (jsonDepth(bytes, maxDepth) > maxDepth) {
    release(bytes);
    throw new TollgateError('TOLLGATE_ERR_BAD_REQUEST', `JSON nesting deeper than server.json_max_depth (${maxDepth})`);
  }
  const text = bytes.toString('utf8');
  release(bytes);
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    throw new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY();
  }
  // The parsed values are walked (linear in them; a regex on the text to spare the walk was quadratic in a run of
  // digits: a 10 MB body of digit words held the event loop 4.4 s, and missed 1<250 zeros>e99).
  const numbers = numbersIn(value);
  if (numbers < 0) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'a number in the body is too large to represent (it would be sent on as null, which the provider would take as unset)');
  }
  // A number JavaScript changed (past 2^53, -0): the body is parsed again keeping those literals as the client wrote
  // them (raw-numbers.ts). Only such bodies pay for it (a scan of the text for the literals JavaScript changed: a
  // `1e20` it writes back as it was is not one), and only up to MAX_KEPT_NUMBERS literals: each costs a placeholder in
  // a second parse (a body of millions of `-0` took 11 times the time and memory of its first parse); past that (the
  // scan stops there), or if the second parse fails, the body's values go on as parsed (rounded), as before.
  if (numbers > 0) {
    const kept = keptParse(text);
    if (kept !== null) return kept;
  }
  return value;
}

/** The most number literals a body may have kept as written (a `seed`, a schema's bounds: a few). */
export const MAX_KEPT_NUMBERS = 64;

/** The body parsed again with its lossy number literals kept (raw-numbers.ts), or null when none could be. */
function keptParse(text: string): object | null {
  try {
    const lossless = losslessParse(text, MAX_KEPT_NUMBERS);
    if (lossless === null) return null;
    const kept = secureJson.parse(lossless.text, undefined, { protoAction: 'error', constructorAction: 'error' }) as unknown;
    if (!lossless.restore(kept) || typeof kept !== 'object' || kept === null) return null;
    markRawNumbers(kept);
    return kept;
  } catch {
    return null; // the first parse's values stand
  }
}

/**
 * What `v`'s numbers are: -1 when one is a number JSON cannot write back (Infinity: JSON.stringify writes null), else
 * how many may not be what the client wrote (2^53 or more, or -0: the text says which are). A loop, not recursion: a body may nest as deep as
 * server.json_max_depth allows (10,000).
 */
function numbersIn(v: unknown): number {
  let inexact = 0;
  const todo: unknown[] = [v];
  while (todo.length > 0) {
    const x = todo.pop();
    if (typeof x === 'number') {
      if (!Number.isFinite(x)) return -1;
      if (x >= TWO_53 || x <= -TWO_53 || Object.is(x, -0)) inexact++;
    } else if (x !== null && typeof x === 'object') {
      for (const y of Array.isArray(x) ? x : Object.values(x)) todo.push(y);
    }
  }
  return inexact;
}

const TWO_53 = 2 ** 53;

/** Register the parser for application/json (and its parameters, e.g. charset) on `app`. */
export function registerJsonBody(app: FastifyInstance, opts: JsonBodyOptions): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', async (_req: FastifyRequest, payload: IncomingMessage) => {
    // A compressed body is not decoded (no client of the gateway's sends one): said as such, not as invalid JSON.
    const encoding = payload.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity' && encoding.trim() !== '') {
      throw new TollgateError('TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE', `a request body in content-encoding '${encoding.slice(0, 40)}' is not accepted: send it uncompressed`);
    }
    return parseJsonBody(await collect(payload, opts.limit), opts.maxDepth());
  });
}
