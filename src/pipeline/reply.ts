// Answering a client that may already be gone: header values made safe, event streams opened and closed, writes
// that respect back-pressure, and the aborted outcome of a client that left.

import { cutAtStop } from './drain.js';
import { validateHeaderValue, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { TollgateError } from '../core/errors.js';
import type { UpstreamResponse } from '../providers/upstream.js';
import type { Outcome } from './outcome.js';
import type { Route } from '../routing/resolve.js';

/** The status recorded for a client that went away before a response started (nginx's convention). */
export const CLIENT_CLOSED = 499;
// Not x-request-id: the client's x-request-id is the id of its usage row, never the upstream's.
export const FORWARDED_ERROR_HEADERS = ['content-type', 'retry-after', 'retry-after-ms'];

/** The longest an event stream's write may wait for its client to read (the route's stall_s), by response. */
const clientStallMs = new WeakMap<ServerResponse, number>();
/** Streams ended because their client stopped reading for that long (recorded `client_stalled`). */
const stalledClients = new WeakSet<ServerResponse>();

/** The client went away: the outcome is `aborted`, and nobody is left to answer. */
export function markAborted(outcome: Outcome, reply: FastifyReply): void {
  outcome.status = 'aborted';
  if (!reply.raw.headersSent) outcome.httpStatus = CLIENT_CLOSED;
  // Cut by the stop's deadline (drain.ts), or by the client not reading, rather than left by the client.
  outcome.errorType = cutAtStop.has(reply.raw) ? 'shutdown' : stalledClients.has(reply.raw) ? 'client_stalled' : 'client_closed';
  // Tell fastify the response is ours so it does not try to send one.
  if (!reply.sent) reply.hijack();
}

export function pickHeaders(h: UpstreamResponse['headers'], names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = h[n];
    if (typeof v === 'string') out[n] = v;
    else if (Array.isArray(v) && v.length > 0) out[n] = v[0]!;
  }
  return out;
}

/**
 * A model name as a header value: as is when it is visible ASCII (and spaces), else percent-encoded (a requested
 * model is client input and may hold anything, which a raw header value cannot).
 */
export function modelHeader(model: string): string {
  return /^[\x20-\x7e]*$/.test(model) ? model : percentEncoded(model);
}

/**
 * Client text as a header value that is always valid: its UTF-8 bytes, visible ASCII as is, anything else (spaces,
 * controls, non-ASCII), `%` and the characters of `reserved` percent-encoded, so decodeURIComponent gives the text back.
 * Byte by byte (a lone surrogate becomes U+FFFD's bytes), where encodeURIComponent would throw.
 */
export function percentEncoded(s: string, reserved = ''): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += b > 0x20 && b < 0x7f && b !== 0x25 && !reserved.includes(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Write and respect back-pressure; resolves early if the client goes away. A client of an event stream that reads
 * nothing for the stream's stall time is let go (the response destroyed: the upstream call is released, and the row
 * says `client_stalled`): a stream the client stopped reading must not hold a provider's connection for ever. The
 * relay is told by a rejection (what came after did not reach the client). A large write goes in pieces, so that a
 * client reading slowly shows its progress (each piece's drain) and is not taken for one that stopped.
 */
function write(raw: ServerResponse, s: string | Uint8Array): Promise<void> | void {
  if (raw.destroyed) return;
  if (s.length <= PIECE) return raw.write(s) ? undefined : drained(raw);
  return inPieces(raw, typeof s === 'string' ? Buffer.from(s) : s);
}

/** The size of a write's pieces: a slow reader drains one within the stall time. */
const PIECE = 64 * 1024;

async function inPieces(raw: ServerResponse, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length && !raw.destroyed; at += PIECE) {
    if (!raw.write(bytes.subarray(at, at + PIECE))) await drained(raw);
  }
}

/** The response drained (or closed: a client gone); rejected when the client read nothing for its stall time. */
function drained(raw: ServerResponse): Promise<void> {
  const stallMs = clientStallMs.get(raw);
  return new Promise((resolve, reject) => {
    const timer = stallMs === undefined ? undefined : setTimeout(() => {
      stalledClients.add(raw);
      raw.destroy();
    }, stallMs);
    const done = () => {
      clearTimeout(timer);
      raw.off('drain', done);
      raw.off('close', done);
      if (stalledClients.has(raw)) reject(new Error('the client read nothing for the stream\'s stall time'));
      else resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/**
 * Take the response over from fastify and start an SSE stream (`status`, 200 unless a same-format relay passes the
 * upstream's 2xx on; the headers the reply carries). `stallMs`: how long a write may wait for the client to read (the
 * route's `timeouts.stall_s`, as `stallOf` gives it).
 */
export function openEventStream(reply: FastifyReply, stallMs: number, status = 200): ServerResponse {
  // The headers set on the reply so far (x-request-id, the auto-switch marks) go with the stream's.
  const headers: OutgoingHttpHeaders = {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  };
  // Written before the response is taken over: a value Node cannot send (the gateway's bug) throws here, while fastify
  // still answers: the header is removed and a 500 in the error shape goes out, never a throw after hijack() that leaves
  // the client hanging. Node checks every value as it writes them, so the headers are looked at again only then.
  const raw = reply.raw;
  try {
    raw.writeHead(status, headers);
  } catch (err) {
    let bad = '';
    for (const [name, value] of Object.entries(headers)) {
      try {
        for (const v of [value ?? []].flat()) validateHeaderValue(name, String(v));
      } catch {
        reply.removeHeader((bad = name));
      }
    }
    throw new TollgateError('TOLLGATE_ERR_INTERNAL', `the response header '${bad}' has a value that cannot be sent`, { cause: err });
  }
  reply.hijack();
  clientStallMs.set(raw, stallMs);
  return raw;
}

/** A route's stall time in ms (a request with no route yet: the default's 30 s). */
export function stallOf(route: Route | null): number {
  return (route?.provider.timeouts.stall_s ?? 30) * 1000;
}

/**
 * End the stream, with `last` (its last text, in the same write as the end: fitsOneWrite); while the server is
 * shutting down (`closing`), close the connection too, rather than leave it in keep-alive.
 */
function closeEventStream(raw: ServerResponse, server: { readonly closing: boolean }, last: string | Uint8Array = ''): void {
  if (raw.destroyed) return;
  const socket = raw.socket; // detached from the response once it finishes
  if (server.closing && socket) raw.once('finish', () => socket.end());
  if (last.length === 0) raw.end();
  else raw.end(last);
}

/**
 * Whether `s` would go out now, without waiting for the client to read (what is buffered stays under the high water
 * mark, less the chunked encoding's own bytes around it): then it may wait for the stream's end and go in the end's
 * write, for the same effect. What would wait is written as it comes, so that a client that stops reading is still
 * seen (the stall time).
 */
function fitsOneWrite(raw: ServerResponse, s: string | Uint8Array): boolean {
  const room = raw.writableHighWaterMark - raw.writableLength - 16;
  return typeof s === 'string' ? s.length * 3 < room || Buffer.byteLength(s) < room : s.length < room;
}

/**
 * Whether a body has had its end (no more data will come) and everything it read has been taken: what was just read
 * is its last. Node's stream state (`ended`: the end was pushed); its public `readableEnded` says so only once the
 * 'end' event has been emitted, after the reader has done with the last read.
 */
export function bodyEnded(body: Readable): boolean {
  const state = (body as unknown as { _readableState?: { ended?: unknown; length?: unknown } })._readableState;
  return state?.ended === true && state.length === 0;
}

/**
 * A client's event stream, written as the upstream's reads complete, whose last text goes out in the same write as
 * the stream's end: one system call where the end alone was another (docs/benchmarks.md, "A stream's content chunks
 * read without a parse, and the end of a stream in its last write"). Only a text that would have gone out without
 * waiting is kept for the end.
 */
export class EventStreamOut {
  readonly #raw: ServerResponse;
  #last: string | Uint8Array | null = null;

  constructor(raw: ServerResponse) {
    this.#raw = raw;
  }

  /** Write `s` (after what was kept), or keep it for the end when it is the stream's `last` text and fits. */
  write(s: string | Uint8Array, last: boolean): Promise<void> | void {
    const kept = this.#last;
    if (kept !== null) {
      this.#last = null;
      const waiting = write(this.#raw, kept);
      if (waiting !== undefined) return waiting.then(() => this.write(s, last));
    }
    if (last && s.length > 0 && !this.#raw.destroyed && fitsOneWrite(this.#raw, s)) {
      this.#last = s;
      return undefined;
    }
    return write(this.#raw, s);
  }

  /** End the stream with what was kept (closeEventStream). */
  close(server: { readonly closing: boolean }): void {
    const kept = this.#last;
    this.#last = null;
    closeEventStream(this.#raw, server, kept ?? '');
  }
}
