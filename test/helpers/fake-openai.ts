// A fake OpenAI Chat Completions upstream on a real socket (127.0.0.1, port 0). It speaks the wire format as
// OpenAI does: JSON for non-streamed requests; SSE chunks with `usage: null` on each chunk and a final
// `choices: []` usage chunk only when stream_options.include_usage is true; then `data: [DONE]`.
// Tests script what it does next with `next(...)`; it records every request it receives.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export type Behaviour =
  | { kind: 'ok'; words?: string[]; usage?: FakeUsage; chunkDelayMs?: number; omitUsage?: boolean; delayMs?: number }
  | { kind: 'error'; status: number; body: unknown; headers?: Record<string, string> }
  /** Stream `chunks` content chunks, then send nothing more (the socket stays open). */
  | { kind: 'stall'; chunks: number }
  /** Stream `chunks` content chunks, then close the connection without finishing. */
  | { kind: 'cut'; chunks: number }
  | { kind: 'not-json' };

export interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

export const DEFAULT_USAGE: FakeUsage = { prompt_tokens: 11, completion_tokens: 7, cached_tokens: 3, reasoning_tokens: 2 };
export const DEFAULT_WORDS = ['Hello', ' from', ' the', ' fake', ' upstream'];

export interface FakeOpenAI {
  /** base_url for the provider config (ends in /v1). */
  readonly baseUrl: string;
  readonly received: Received[];
  /** Queue behaviours for the next requests; when the queue is empty, 'ok' with defaults. */
  next(...b: Behaviour[]): void;
  /** Resolves when a request has arrived and its response has started (used to time client aborts). */
  waitForChunks(n: number): Promise<void>;
  /** True once the upstream saw the client (the gateway) hang up on a request. */
  readonly aborted: number;
  close(): Promise<void>;
}

function usageJson(u: FakeUsage): Record<string, unknown> {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

export async function startFakeOpenAI(t: { teardown(fn: () => unknown): void }): Promise<FakeOpenAI> {
  const queue: Behaviour[] = [];
  const received: Received[] = [];
  let chunksSent = 0;
  let aborted = 0;
  const chunkWaiters: { n: number; resolve: () => void }[] = [];
  const sockets = new Set<import('node:net').Socket>();

  const sentChunk = () => {
    chunksSent++;
    for (const w of [...chunkWaiters]) {
      if (chunksSent >= w.n) {
        chunkWaiters.splice(chunkWaiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as Record<string, unknown>;
    received.push({ path: req.url ?? '', headers: req.headers, body });
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
    });
    const b: Behaviour = queue.shift() ?? { kind: 'ok' };
    const model = String(body.model);
    const id = `chatcmpl-fake-${received.length}`;
    const created = 1731000000;

    if (b.kind === 'error') {
      res.writeHead(b.status, { 'content-type': 'application/json', ...(b.headers ?? {}) });
      res.end(JSON.stringify(b.body));
      return;
    }
    if (b.kind === 'not-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>gateway timeout</html>');
      return;
    }
    const words = b.kind === 'ok' ? (b.words ?? DEFAULT_WORDS) : DEFAULT_WORDS;
    const usage = b.kind === 'ok' ? (b.usage ?? DEFAULT_USAGE) : DEFAULT_USAGE;
    if (b.kind === 'ok' && b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (res.destroyed) return;
    if (body.stream !== true) {
      if (b.kind !== 'ok') throw new Error(`behaviour ${b.kind} needs a streamed request`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id, object: 'chat.completion', created, model,
          choices: [{ index: 0, message: { role: 'assistant', content: words.join(''), refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
          ...(b.omitUsage ? {} : { usage: usageJson(usage) }),
          service_tier: 'default', system_fingerprint: 'fp_fake',
        }),
      );
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const u = includeUsage ? { usage: null } : {};
    const base = { id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fake' };
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], ...u });
    const limit = b.kind === 'stall' || b.kind === 'cut' ? b.chunks : words.length;
    for (let i = 0; i < limit; i++) {
      if (b.kind === 'ok' && b.chunkDelayMs) await new Promise((r) => setTimeout(r, b.chunkDelayMs));
      if (res.destroyed) return;
      send({ ...base, choices: [{ index: 0, delta: { content: words[i % words.length] }, logprobs: null, finish_reason: null }], ...u });
      sentChunk();
    }
    if (b.kind === 'stall') return; // the socket stays open, silent
    if (b.kind === 'cut') {
      res.socket?.destroy();
      return;
    }
    send({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...u });
    if (includeUsage && !b.omitUsage) send({ ...base, choices: [], usage: usageJson(usage) });
    res.end('data: [DONE]\n\n');
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: err.message } }));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  t.teardown(close);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    next: (...b) => queue.push(...b),
    waitForChunks: (n) => new Promise<void>((resolve) => (chunksSent >= n ? resolve() : chunkWaiters.push({ n, resolve }))),
    get aborted() {
      return aborted;
    },
    close,
  };
}

/** A provider config row for the fake upstream. */
export function fakeProvider(baseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Fake OpenAI',
    group: 'paid',
    format: 'openai',
    base_url: baseUrl,
    auth: { type: 'api_key', key: 'sk-upstream-secret-123' },
    price: { input: 2.5, output: 10, cached: 1.25 },
    timeouts: { connect_s: 2, stall_s: 1 },
    models: { 'gpt-4o': { kind: 'llm' }, 'org/model-with/slashes': { kind: 'llm' } },
    ...extra,
  };
}
