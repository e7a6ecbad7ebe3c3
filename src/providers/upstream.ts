// What every transport has in common: the response shape the pipeline reads, the per-request abort signal, and
// the Transport interface itself. HTTP through undici pools (transport.ts) and the in-process mock (mock.ts) are two
// transports behind it; the pipeline never knows which one answered.

import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { ProviderConfig } from '../config/types.js';
import type { UpstreamRequest } from '../wire/types.js';

export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The body, decoded from the `content-encoding` it came in, if any (transport.ts): plain bytes on every path. */
  readonly body: Readable;
  /** The whole body as text (consumes `body`); past `server.upstream_answer_limit_bytes`, TOLLGATE_ERR_UPSTREAM_TOO_LARGE. */
  text(): Promise<string>;
  /** The whole body's bytes, as they came (consumes `body`); bounded as `text()` is. */
  bytes(): Promise<Buffer>;
}

/** Collect a stream's bytes. */
export async function readBytes(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of body) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

/**
 * The per-request abort signal for upstream calls: undici accepts an EventEmitter with `aborted`, which costs a
 * fraction of an AbortController (whose EventTarget machinery showed up in the request path's profile).
 */
export class ClientAbort extends EventEmitter {
  aborted = false;
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
  /** A real AbortSignal that follows this one, for APIs that need one. */
  toSignal(): AbortSignal {
    const ac = new AbortController();
    if (this.aborted) ac.abort();
    else this.once('abort', () => ac.abort());
    return ac.signal;
  }
}

export type AbortLike = AbortSignal | ClientAbort;

export interface SendOptions {
  readonly stream: boolean;
  readonly signal: ClientAbort;
  readonly extraHeaders?: Record<string, string>;
  /**
   * Called once when the request is handed to the upstream: its bytes to a connection that is open (HTTP), or the
   * in-process mock given the request. Not called when no connection was made (refused, DNS, connect timeout), nor
   * for a request aborted before a connection took it. What decides a row's `dispatched` (docs/quota.md).
   */
  readonly onDispatch?: () => void;
}

/** One way of sending an upstream request and getting its response. */
export interface Transport {
  /** `id`: the connection (`<provider>#<name>`) or provider the call is for (one pool each, where pools exist). */
  send(id: string, provider: ProviderConfig, req: UpstreamRequest, opts: SendOptions): Promise<UpstreamResponse>;
}
