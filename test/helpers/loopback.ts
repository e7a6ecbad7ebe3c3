// The plumbing every fake upstream shares: a real HTTP server on 127.0.0.1 (port 0) whose handler errors become a
// 500 in the fake's own error shape, whose open sockets are destroyed at close, and which the test stops at teardown.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Loopback {
  readonly port: number;
  close(): Promise<void>;
}

/** Start the server; `onError` answers a request whose handler threw, in the fake's own error shape. */
export async function listenLoopback(
  t: { teardown(fn: () => unknown): void },
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  onError: (err: unknown, res: ServerResponse) => void,
): Promise<Loopback> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => onError(err, res));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }));
  t.teardown(close);
  return { port: (server.address() as AddressInfo).port, close };
}

/**
 * Write and wait until the bytes are handed to the socket (a destroy() right after a bare write() loses them);
 * resolves on error too, and at once when the peer is already gone.
 */
export function flushed(res: ServerResponse, chunk: string): Promise<void> {
  return new Promise<void>((resolve) => {
    if (res.destroyed) return resolve();
    res.write(chunk, () => resolve());
  });
}

/** Counts the stream chunks a fake has sent, so a test can act once n have gone out. */
export class ChunkCounter {
  #sent = 0;
  readonly #waiters: { n: number; resolve: () => void }[] = [];

  sent(): void {
    this.#sent++;
    for (const w of [...this.#waiters]) {
      if (this.#sent >= w.n) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  waitFor(n: number): Promise<void> {
    return new Promise<void>((resolve) => (this.#sent >= n ? resolve() : this.#waiters.push({ n, resolve })));
  }
}

// A hand-written fake upstream's pieces (test/integration/usage-vendors.test.ts, test/ledger/audio-tokens.test.ts).

/** A request's JSON body. */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let s = '';
  for await (const c of req) s += String(c);
  return JSON.parse(s) as Record<string, unknown>;
}

/** A 200 JSON answer. */
export function answerJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A 200 event stream: each event a `data:` frame of its JSON, `{event, data}` a named one, a string sent as it is. */
export function answerSse(res: ServerResponse, events: readonly (Record<string, unknown> | string)[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of events) res.write(typeof e === 'string' ? e : 'event' in e ? `event: ${String(e.event)}\ndata: ${JSON.stringify(e.data)}\n\n` : `data: ${JSON.stringify(e)}\n\n`);
  res.end();
}

/** A Gemini candidate answering `text` (with its finish reason, when given). */
export const geminiCandidate = (text: string, finishReason?: string) => ({ content: { role: 'model', parts: [{ text }] }, index: 0, ...(finishReason ? { finishReason } : {}) });
