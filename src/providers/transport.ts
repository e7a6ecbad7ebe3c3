// Outbound calls: one undici Pool per provider (keep-alive, connect timeout from config), rebuilt when a live
// config edit changes the provider's origin or limits; the old pool finishes its in-flight requests and closes.
// The `mock` format is another Transport (mock.ts), answered in process.

import { Pool, poolBusy, poolRequest } from '../core/undici.js';
import { Readable } from 'node:stream';
import type { ProviderConfig } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { jsonBody } from '../wire/json-stream.js';
import { mockTransport } from './mock.js';
import { DEFAULT_ANSWER_LIMIT, byDeadline, declaredLength, decodedBody, discard, readWithin, textWithin, undecodable, utf8Text } from './answer-body.js';
import { performance } from 'node:perf_hooks';
import { ClientAbort, type SendOptions, type Transport, type UpstreamResponse } from './upstream.js';
import type { UpstreamRequest } from '../wire/types.js';

import { connectionsOf } from '../config/connections.js';

/**
 * The signal of a request sent to a pool with no connection free: it follows the client's, and also aborts when the
 * response has not started `ms` after the send (`expired` then says why). undici keeps an aborted request in the
 * pool's queue until a connection takes it (and then drops it unsent), so `race` ends the wait at the abort itself.
 */
class QueueDeadline extends ClientAbort {
  expired = false;
  readonly #timer: NodeJS.Timeout;

  constructor(client: ClientAbort, ms: number) {
    super();
    if (client.aborted) this.abort();
    else client.once('abort', () => this.abort());
    this.#timer = setTimeout(() => {
      this.expired = true;
      this.abort();
    }, ms);
  }

  /** `call`, or a rejection as soon as this aborts (the call's own late rejection is then dropped). */
  race<T>(call: Promise<T>): Promise<T> {
    call.catch(() => undefined);
    if (this.aborted) return Promise.reject(new Error('aborted while queued'));
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(new Error('aborted while queued'));
      this.once('abort', onAbort);
      call.then(resolve, reject).finally(() => this.off('abort', onAbort));
    });
  }

  /** The response started (or the call ended): no deadline any more; the client's abort still follows. */
  started(): void {
    clearTimeout(this.#timer);
  }
}

interface PoolEntry {
  readonly key: string;
  readonly pool: Pool;
}

// Provider configs are frozen and replaced whole on reload, so what is derived from one is computed once.
const keys = new WeakMap<ProviderConfig, string>();

function poolKey(p: ProviderConfig): string {
  let k = keys.get(p);
  if (k === undefined) keys.set(p, (k = JSON.stringify([new URL(p.base_url).origin, p.timeouts.connect_s, p.connections])));
  return k;
}

/** The upstream body: one Buffer (with a content-length) when small, else a stream of ~64 KiB chunks (chunked). */
function requestBody(body: Readonly<Record<string, unknown>>): Buffer | Readable {
  const bytes = jsonBody(body);
  return Buffer.isBuffer(bytes) ? bytes : Readable.from(bytes, { objectMode: false });
}

/**
 * Classify a transport failure (the caller has already ruled out a client that went away). Every failure of the
 * connection carries a code (undici's `UND_ERR_*`, the system's `ECONNRESET`...); an error without one is no transport
 * failure but the gateway's own bug (a TypeError reading an answer): internal, so it is neither told to the client as
 * the upstream's fault nor held against the provider (no cooldown, no fallback).
 */
export function classifyTransportError(err: unknown): TollgateError {
  if (err instanceof TollgateError) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return new TollgateError('TOLLGATE_ERR_INTERNAL', 'internal error', { cause: err });
  // An encoded answer that does not decode (undecodableBytes).
  if (undecodableBytes(err)) {
    return new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider's encoded answer does not decode (${code})`, { cause: err });
  }
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'timed out connecting to the upstream provider', { cause: err });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'the upstream provider did not start its response in time', { cause: err });
    case 'UND_ERR_BODY_TIMEOUT':
      return new TollgateError('TOLLGATE_ERR_UPSTREAM_STALL', 'the upstream provider stalled: no data within the stall timeout', { cause: err });
    default:
      return new TollgateError('TOLLGATE_ERR_UPSTREAM_CONNECT', `upstream connection failed${code ? ` (${code})` : ''}`, { cause: err });
  }
}

/** One upstream HTTP response as it arrived (status and headers; the body is the caller's), for observers. */
export interface UpstreamResponseEvent {
  /** `<provider>#<name>`, or the provider id for a call made without a connection. */
  readonly connectionId: string;
  readonly providerId: string;
  /** The connection's name ('' for a call made without one). */
  readonly connection: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type UpstreamResponseListener = (e: UpstreamResponseEvent) => void;

/**
 * An answer read through its decoder (answer-body.ts's decodedBody): `server.upstream_answer_limit_bytes` counts the
 * decoded bytes (a gzip bomb stops there), and the headers lose `content-encoding` and `content-length` (which
 * describe the encoded bytes), so nothing downstream relays or believes them.
 */
function decoded(status: number, headers: UpstreamResponse['headers'], body: Readable, read: { limit: number; deadline: number }): UpstreamResponse {
  const { 'content-encoding': encoding, 'content-length': _length, ...plain } = headers;
  const bytes = (): Promise<Buffer> => byDeadline(body, read.deadline, () => readWithin(body, read.limit, null));
  if (status < 400) return { status, headers: plain, body, text: async () => utf8Text(await bytes()), bytes };
  // An error answer whose bytes do not decode (a gzip cut short) still counts as its status, as one in a coding the
  // gateway does not decode does (undecodedError): only its body is replaced by a message.
  const readable = async (): Promise<Buffer> => {
    try {
      return await bytes();
    } catch (err) {
      if (!undecodableBytes(err)) throw err;
      return errorMessage(`the upstream provider answered ${status} in content-encoding '${String(encoding).slice(0, 40)}', whose bytes do not decode: its error body is left out`);
    }
  };
  return { status, headers: plain, body, text: async () => utf8Text(await readable()), bytes: readable };
}

/** zlib's (Z_DATA_ERROR, Z_BUF_ERROR: cut short) and brotli's (ERR__ERROR_FORMAT_...) errors: encoded bytes that do not decode. */
function undecodableBytes(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('Z_') || code.startsWith('ERR__ERROR_'));
}

/** The body an error answer's unreadable one is replaced with. */
const errorMessage = (message: string): Buffer => Buffer.from(JSON.stringify({ error: { type: 'upstream_error', message } }));

/**
 * An error answer (status >= 400) in a coding the gateway cannot decode: its status and headers still say what
 * happened (a 429 and its Retry-After: a combo moves on, the connection cools, the client gets the 429), and only its
 * body, discarded, is replaced by a JSON error naming the coding. Refused as a protocol failure, the client got a 502
 * and the Retry-After was lost.
 */
function undecodedError(status: number, headers: UpstreamResponse['headers'], body: Readable, coding: string): UpstreamResponse {
  discard(body);
  const { 'content-encoding': _encoding, 'content-length': _length, ...plain } = headers;
  const bytes = errorMessage(`the upstream provider answered ${status} in content-encoding '${coding}', which the gateway does not decode (it asks for none): its error body is left out`);
  return { status, headers: { ...plain, 'content-type': 'application/json' }, body: Readable.from([bytes]), text: async () => bytes.toString('utf8'), bytes: async () => bytes };
}

/** Transports that answer in process, by provider format; every other format goes over HTTP. */
const IN_PROCESS: Readonly<Partial<Record<ProviderConfig['format'], Transport>>> = { mock: mockTransport };

/** The transport for every upstream call: HTTP through one undici pool per connection, or an in-process one. */
export class Dispatcher implements Transport {
  readonly #pools = new Map<string, PoolEntry>();
  readonly #listeners = new Set<UpstreamResponseListener>();
  readonly #answerLimit: () => number;

  /** `answerLimit`: the largest whole answer read, in bytes (`server.upstream_answer_limit_bytes`, read on each call). */
  constructor(answerLimit: () => number = () => DEFAULT_ANSWER_LIMIT) {
    this.#answerLimit = answerLimit;
  }

  /**
   * Call `listener` with every HTTP response's status and headers (not the mock's), before the caller reads the body.
   * A listener that throws is ignored: an observer never breaks a request. Returns the unsubscribe function.
   */
  onResponse(listener: UpstreamResponseListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(id: string, status: number, headers: UpstreamResponseEvent['headers']): void {
    if (this.#listeners.size === 0) return;
    const hash = id.indexOf('#');
    const e: UpstreamResponseEvent = {
      connectionId: id, providerId: hash === -1 ? id : id.slice(0, hash), connection: hash === -1 ? '' : id.slice(hash + 1), status, headers,
    };
    for (const fn of this.#listeners) {
      try {
        fn(e);
      } catch {
        // observers are not allowed to fail a request
      }
    }
  }

  /** Drop pools whose provider disappeared or changed; they finish what they carry, then close. */
  reconcile(providers: Readonly<Record<string, ProviderConfig>>): void {
    for (const [id, entry] of this.#pools) {
      // Pools are per connection (`<provider>#<name>`), or per provider for calls made without one.
      const pid = id.split('#')[0]!;
      const provider = providers[pid];
      const p = provider && id.includes('#') ? connectionsOf(pid, provider).find((c) => c.id === id)?.provider : provider;
      if (!p || IN_PROCESS[p.format] !== undefined || poolKey(p) !== entry.key) {
        this.#pools.delete(id);
        void entry.pool.close().catch(() => undefined);
      }
    }
  }

  #pool(id: string, p: ProviderConfig): Pool {
    const key = poolKey(p);
    const found = this.#pools.get(id);
    if (found && found.key === key) return found.pool;
    if (found) void found.pool.close().catch(() => undefined);
    const pool = new Pool(new URL(p.base_url).origin, {
      connections: p.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connect: { timeout: p.timeouts.connect_s * 1000 },
    });
    this.#pools.set(id, { key, pool });
    return pool;
  }

  async send(id: string, p: ProviderConfig, req: UpstreamRequest, opts: SendOptions): Promise<UpstreamResponse> {
    // In process (the mock): the body is read as a value; nothing is serialised.
    const local = IN_PROCESS[p.format];
    if (local !== undefined) return local.send(id, p, req, opts);
    const stallMs = p.timeouts.stall_s * 1000;
    const requestMs = p.timeouts.request_s * 1000;
    const headersMs = opts.stream ? stallMs : requestMs;
    const sentAt = performance.now();
    const pool = this.#pool(id, p);
    // undici's headersTimeout starts once the request is on a connection: one queued behind `connections` busy ones
    // (clients that stopped reading their streams, a provider that holds every call) gets its deadline here.
    const queued = poolBusy(pool) ? new QueueDeadline(opts.signal, headersMs) : null;
    try {
      const call = poolRequest(pool, {
        method: 'POST',
        path: req.path,
        headers: opts.extraHeaders ? { ...req.headers, ...opts.extraHeaders } : req.headers,
        body: requestBody(req.body),
        signal: queued ?? opts.signal,
        headersTimeout: headersMs,
        bodyTimeout: stallMs,
      }, opts.onDispatch);
      const res = await (queued === null ? call : queued.race(call));
      queued?.started();
      const body = res.body;
      this.#notify(id, res.statusCode, res.headers);
      const limit = this.#answerLimit();
      const deadline = sentAt + requestMs;
      // The gateway asks for no encoding; an answer in one anyway (a proxy in between) is decoded here, for every path.
      const encoding = res.headers['content-encoding'];
      const unknown = encoding !== undefined && res.statusCode >= 400 ? undecodable(encoding) : null;
      if (unknown !== null) return undecodedError(res.statusCode, res.headers, body, unknown);
      if (encoding !== undefined) return decoded(res.statusCode, res.headers, decodedBody(body, encoding), { limit, deadline });
      const declared = declaredLength(res.headers);
      return {
        status: res.statusCode, headers: res.headers, body,
        // Within a declared length undici reads no more than it says: its own reader, with no count and no wrapper
        // (the common case; `bench/ab.mjs` put the wrapper at about 1.5 % of a request's CPU). A whole answer must be
        // whole within timeouts.request_s of the call (byDeadline: no timer when it came with its headers).
        text: declared !== null && declared <= limit
          ? () => byDeadline(body, deadline, () => body.text())
          : () => byDeadline(body, deadline, () => textWithin(body, limit, declared)),
        bytes: () => byDeadline(body, deadline, () => readWithin(body, limit, declared)),
      };
    } catch (err) {
      queued?.started();
      if (queued?.expired === true && !opts.signal.aborted) {
        throw new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', `the upstream provider did not start its response in time: all ${p.connections} of its connections (\`connections\`) stayed busy for ${headersMs / 1000} s`, { cause: err });
      }
      throw opts.signal.aborted ? err : classifyTransportError(err);
    }
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((e) => e.pool.close().catch(() => undefined)));
  }
}
