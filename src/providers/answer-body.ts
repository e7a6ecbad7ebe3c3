// A non-streamed upstream answer read whole, within `server.upstream_answer_limit_bytes`. The answer is held while it
// is parsed, recorded and rendered (its bytes, its text, the parsed value, what the client gets: about four times its
// size), so an upstream that answers 100 MB, by mistake or on purpose, cost 400 MB of memory a request; past the
// limit the call fails as TOLLGATE_ERR_UPSTREAM_TOO_LARGE and the connection is closed, nothing more read. A stream is
// not held (each frame is passed on as it comes, and a frame is bounded by the SSE parser), so this is for whole answers.
//
// An answer in a `content-encoding` (the gateway asks for none; a misbehaving upstream or a proxy in between sends one
// anyway) is decoded as it is read (decodedBody), so every path sees plain bytes and the limit counts decoded bytes:
// a gzip bomb is stopped at the limit like any large answer. A coding it cannot decode fails the call as a protocol
// error, except on an error status, whose status and headers still count (transport.ts, undecodedError).

import { performance } from 'node:perf_hooks';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { TollgateError } from '../core/errors.js';

/** The default of `server.upstream_answer_limit_bytes`: 64 MiB, far above any chat answer, inline images included. */
export const DEFAULT_ANSWER_LIMIT = 64 * 1024 * 1024;

function tooLarge(limit: number, declared: number | null): TollgateError {
  const what = declared === null ? 'is larger than' : `declares ${declared} bytes, more than`;
  return new TollgateError('TOLLGATE_ERR_UPSTREAM_TOO_LARGE', `the upstream provider's answer ${what} server.upstream_answer_limit_bytes (${limit}) allows`);
}

/**
 * Close a body nobody will read: its connection is closed, not read to the end. undici's body emits its error (ours,
 * or "Request aborted") as an 'error' event, which with no listener would take the process down.
 */
export function discard(body: Readable, err?: Error): void {
  body.on('error', () => undefined);
  body.destroy(err);
}

/** The `content-length` an answer declares, or null (absent, repeated or not a number). */
export function declaredLength(headers: Readonly<Record<string, string | string[] | undefined>>): number | null {
  const v = headers['content-length'];
  if (typeof v !== 'string' || v === '') return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/**
 * Refuse at once an answer that declares more than `limit` bytes (the body is destroyed: its connection is closed,
 * not read to the end). True when the declared length is within the limit: undici never delivers more bytes than a
 * `content-length` says, so such a body can be read by undici's own reader, with no count.
 */
export function declaredWithin(body: Readable, limit: number, declared: number | null): boolean {
  if (declared === null) return false;
  if (declared <= limit) return true;
  const err = tooLarge(limit, declared);
  discard(body, err);
  throw err;
}

/** The whole body as bytes, refused past `limit` (the body destroyed). A UTF-8 byte order mark is kept. */
export async function readWithin(body: Readable, limit: number, declared: number | null): Promise<Buffer> {
  declaredWithin(body, limit, declared);
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    const chunk = c as Buffer;
    n += chunk.length;
    if (n > limit) {
      const err = tooLarge(limit, null);
      discard(body, err);
      throw err;
    }
    parts.push(chunk);
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
}

/** The whole body as UTF-8 text (a byte order mark skipped, as undici's `text()` does), refused past `limit`. */
export async function textWithin(body: Readable & { text(): Promise<string> }, limit: number, declared: number | null): Promise<string> {
  if (declaredWithin(body, limit, declared)) return body.text();
  return utf8Text(await readWithin(body, limit, null));
}

/** Bytes as UTF-8 text, a byte order mark skipped (as undici's `text()` does). */
export function utf8Text(bytes: Buffer): string {
  const bom = bytes.length > 2 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return bytes.toString('utf8', bom ? 3 : 0);
}

/** The decoder of each content coding an answer may come in (HTTP's names; `x-gzip` is gzip's old one). */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress,
};

/** The codings `encoding` lists, in the order they were applied (`identity` is none). */
function codingsOf(encoding: string | readonly string[]): string[] {
  return (typeof encoding === 'string' ? encoding : encoding.join(',')).split(',').map((p) => p.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
}

/** The first coding `encoding` lists that the gateway cannot decode (`zstd`, `compress`...), or null. */
export function undecodable(encoding: string | readonly string[]): string | null {
  return codingsOf(encoding).find((c) => !Object.hasOwn(DECODERS, c))?.slice(0, 40) ?? null;
}

/**
 * `body` decoded from the codings its `content-encoding` lists (in the order they were applied; `identity` is none):
 * a stream of the decoded bytes, which the caller reads (or discards) in place of `body`. Destroying it destroys
 * `body` (its connection closed, the error listened to), and an error of `body` (a reset, a stall) reaches it as it
 * came. Bytes that do not decode fail the read as TOLLGATE_ERR_UPSTREAM_PROTOCOL (transport.ts's classification).
 * A coding the gateway cannot decode (`zstd`, `compress`...) is refused at once, `body` discarded.
 */
export function decodedBody(body: Readable, encoding: string | readonly string[]): Readable {
  const unknown = undecodable(encoding);
  if (unknown !== null) {
    discard(body);
    throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider answered in content-encoding '${unknown}', which the gateway does not decode (it asks for none)`);
  }
  const codings = codingsOf(encoding);
  if (codings.length === 0) return body;
  // The last coding applied is undone first.
  const stages = codings.reverse().map((c) => DECODERS[c]!());
  pipeline([body, ...stages], () => undefined);
  return stages.at(-1)!;
}

/**
 * `read()` of a whole answer, failed as TOLLGATE_ERR_UPSTREAM_TIMEOUT (the body discarded, its connection closed) when
 * the answer is not whole by `deadline` (a `performance.now()` instant: the call's start plus `timeouts.request_s`).
 * Without it an upstream that drips its answer a byte at a time, each within the stall timeout, held the request for
 * as long as it liked. No timer when the body is whole already (the common case: a small answer arrives with its
 * headers, and undici has read it to its end before the caller runs).
 */
export function byDeadline<T>(body: Readable, deadline: number, read: () => Promise<T>): Promise<T> {
  if ((body as { _readableState?: { ended?: boolean } })._readableState?.ended === true) return read();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      const err = new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'the upstream provider did not finish its answer within timeouts.request_s');
      discard(body, err);
      reject(err);
    }, Math.max(0, deadline - performance.now()));
    read().then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
