// A fake OpenAI Chat Completions upstream on a real socket (127.0.0.1, port 0). It speaks the wire format as
// OpenAI does: JSON for non-streamed requests; SSE chunks with `usage: null` on each chunk and a final
// `choices: []` usage chunk only when stream_options.include_usage is true; then `data: [DONE]`.
// Tests script what it does next with `next(...)`; it records every request it receives.
//
// Besides text answers it can call a tool (`tool`: the first function tool of the request, as `message.tool_calls`
// with finish_reason `tool_calls`; streamed as OpenAI streams it: the first tool_calls delta carries index, id,
// type, function.name and empty arguments, later deltas carry argument fragments, then the finish chunk) and
// answer with DeepSeek-style reasoning (`reasoning`: `reasoning_content` before the content, on the message and on
// the deltas). Every streamed chunk is flushed to the socket before the next step, so a `cut` comes after the
// chunks written before it have really left.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { ChunkCounter, flushed, listenLoopback } from './loopback.js';

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export type Behaviour =
  /** `inputOnlyUsage`: the usage names prompt tokens only (as some OpenAI-compatible servers report a partial count). */
  | {
    kind: 'ok'; words?: string[]; usage?: FakeUsage; chunkDelayMs?: number; omitUsage?: boolean; delayMs?: number; inputOnlyUsage?: boolean;
    /** Answer only once this has settled (a test's event, such as another upstream's answer reaching the gateway). */
    after?: Promise<unknown>;
    /** Streamed: SSE comments before the first chunk (OpenRouter's `: OPENROUTER PROCESSING`, keep-alives), and after the first delta. */
    comments?: string[];
    /** Streamed: each data frame carries an `id:` field (1, 2, ...). */
    ids?: boolean;
  }
  | { kind: 'error'; status: number; body: unknown; headers?: Record<string, string> }
  /**
   * Stream `chunks` content chunks, then send nothing more (the socket stays open). For a non-streamed request: the
   * 200 and its headers, then half the JSON answer, then nothing more (`chunks` unused).
   */
  | { kind: 'stall'; chunks: number }
  /** Stream `chunks` content chunks (each flushed to the socket), then close the connection without finishing. */
  | { kind: 'cut'; chunks: number }
  | { kind: 'not-json' }
  /** Answer 200 with the SSE headers, then send nothing (or only these SSE comments) at all (the socket stays open). */
  | { kind: 'silent'; comments?: string[] }
  /**
   * The model calls the first function tool of the request (`name` overrides it; a request without tools is a 400):
   * `args` (DEFAULT_TOOL_ARGS) as the JSON arguments string, streamed in `argChunks` fragments (default 4). `more`:
   * further calls of the same tool in the same turn (parallel tool calls), one per entry, with those arguments; their
   * ids are `toolCallIdFor(n)` with `_2`, `_3`, ... appended. `unindexed`: streamed as Gemini's OpenAI-compatible
   * endpoint, Ollama and Xinference stream calls: each whole (id, type, name, arguments) in one delta, without `index`.
   */
  | { kind: 'tool'; name?: string; args?: Record<string, unknown>; argChunks?: number; usage?: FakeUsage; omitUsage?: boolean; more?: Record<string, unknown>[]; unindexed?: boolean }
  /** Stream `chunks` content chunks, then an `{"error": ...}` payload (as OpenAI reports a failure mid-stream), then end. */
  | { kind: 'stream-error'; chunks: number; code?: string; message?: string }
  /** DeepSeek-style: `reasoning_content` (one delta per entry of `reasoning`), then the text answer. */
  | { kind: 'reasoning'; reasoning?: string[]; words?: string[]; usage?: FakeUsage; omitUsage?: boolean };

export interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
  /** The body exactly as it arrived (UTF-8). */
  readonly text: string;
}

export const DEFAULT_USAGE: FakeUsage = { prompt_tokens: 11, completion_tokens: 7, cached_tokens: 3, reasoning_tokens: 2 };
export const DEFAULT_WORDS = ['Hello', ' from', ' the', ' fake', ' upstream'];
/** The arguments of the `tool` behaviour's call. */
export const DEFAULT_TOOL_ARGS: Record<string, unknown> = { city: 'Paris', unit: 'celsius' };
/** The reasoning of the `reasoning` behaviour, one streamed delta per entry. */
export const DEFAULT_REASONING = ['The user', ' greets me;', ' I will', ' greet back.'];

/** The id of the tool call the fake makes in answer to its `n`-th request (1-based, as `received.length`). */
export const toolCallIdFor = (n: number): string => `call_${String(n).padStart(4, '0')}FakeToolCallXyZ`;


/** The first function tool of a Chat Completions request, if any. */
function firstTool(body: Record<string, unknown>): string | undefined {
  if (!Array.isArray(body.tools)) return undefined;
  for (const t of body.tools as { type?: unknown; function?: { name?: unknown } }[]) {
    if (t?.type === 'function' && typeof t.function?.name === 'string') return t.function.name;
  }
  return undefined;
}

/** A string cut into `n` fragments of about the same length (fewer if it is shorter). */
function fragments(s: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(s.length / Math.max(1, n)));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

export interface FakeOpenAI {
  /** base_url for the provider config (ends in /v1). */
  readonly baseUrl: string;
  readonly received: Received[];
  /** Queue behaviours for the next requests; when the queue is empty, 'ok' with defaults. */
  next(...b: Behaviour[]): void;
  /**
   * What to answer when the queue is empty (default: 'ok'), decided from the request: for a real client that sends
   * a varying number of requests (a CLI agent's tool round), where a fixed queue cannot stay in step.
   */
  answerWith(decide: (r: Received) => Behaviour): void;
  /** Resolves when a request has arrived and its response has started (used to time client aborts). */
  waitForChunks(n: number): Promise<void>;
  /** True once the upstream saw the client (the gateway) hang up on a request. */
  readonly aborted: number;
  /**
   * Headers sent on every later answer, whatever its behaviour (e.g. the provider's rate-limit headers, which
   * docs/quota.md lists); `{}` (the default) sends none.
   */
  setResponseHeaders(h: Record<string, string>): void;
  close(): Promise<void>;
}

function usageJson(u: FakeUsage, inputOnly = false): Record<string, unknown> {
  if (inputOnly) return { prompt_tokens: u.prompt_tokens };
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

export async function startFakeOpenAI(t: { teardown(fn: () => unknown): void }): Promise<FakeOpenAI> {
  let responseHeaders: Record<string, string> = {};
  const queue: Behaviour[] = [];
  let decide: ((r: Received) => Behaviour) | undefined;
  const received: Received[] = [];
  let aborted = 0;
  const sentChunks = new ChunkCounter();


  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const text = Buffer.concat(parts).toString('utf8');
    const body = JSON.parse(text || '{}') as Record<string, unknown>;
    received.push({ path: req.url ?? '', headers: req.headers, body, text });
    for (const [k, v] of Object.entries(responseHeaders)) res.setHeader(k, v);
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
    });
    const b: Behaviour = queue.shift() ?? decide?.(received.at(-1)!) ?? { kind: 'ok' };
    const model = String(body.model);
    const id = `chatcmpl-fake-${received.length}`;
    const created = 1731000000;

    if (b.kind === 'error') {
      res.writeHead(b.status, { 'content-type': 'application/json', ...(b.headers ?? {}) });
      res.end(JSON.stringify(b.body));
      return;
    }
    if (b.kind === 'silent') {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      res.flushHeaders();
      for (const c of b.comments ?? []) await flushed(res, `: ${c}\n\n`);
      return;
    }
    if (b.kind === 'not-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>gateway timeout</html>');
      return;
    }
    const words = b.kind === 'ok' || b.kind === 'reasoning' ? (b.words ?? DEFAULT_WORDS) : DEFAULT_WORDS;
    const usage = b.kind === 'ok' || b.kind === 'tool' || b.kind === 'reasoning' ? (b.usage ?? DEFAULT_USAGE) : DEFAULT_USAGE;
    const omitUsage = (b.kind === 'ok' || b.kind === 'tool' || b.kind === 'reasoning') && b.omitUsage === true;
    const inputOnly = b.kind === 'ok' && b.inputOnlyUsage === true;
    let calls: { id: string; name: string; args: string; fragments: string[] }[] = [];
    if (b.kind === 'tool') {
      const name = b.name ?? firstTool(body);
      if (name === undefined) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'the fake was told to call a tool, but the request has no function tools', type: 'invalid_request_error', param: 'tools', code: null } }));
        return;
      }
      calls = [b.args ?? DEFAULT_TOOL_ARGS, ...(b.more ?? [])].map((a, i) => {
        const args = JSON.stringify(a);
        return { id: toolCallIdFor(received.length) + (i === 0 ? '' : `_${i + 1}`), name, args, fragments: fragments(args, b.argChunks ?? 4) };
      });
    }
    const call = calls[0];
    const reasoning = b.kind === 'reasoning' ? (b.reasoning ?? DEFAULT_REASONING) : [];
    if (b.kind === 'ok' && b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (b.kind === 'ok' && b.after) await b.after.catch(() => undefined);
    if (res.destroyed) return;
    if (body.stream !== true && b.kind === 'stall') {
      const whole = JSON.stringify({ id, object: 'chat.completion', created, model, choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }] });
      res.writeHead(200, { 'content-type': 'application/json' });
      await flushed(res, whole.slice(0, whole.length >> 1));
      return; // the socket stays open, the answer never finishes
    }
    if (body.stream !== true) {
      if (b.kind !== 'ok' && b.kind !== 'tool' && b.kind !== 'reasoning') throw new Error(`behaviour ${b.kind} needs a streamed request`);
      let message: Record<string, unknown>;
      if (call) {
        message = { role: 'assistant', content: null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })), refusal: null, annotations: [] };
      } else if (b.kind === 'reasoning') {
        message = { role: 'assistant', content: words.join(''), reasoning_content: reasoning.join('') };
      } else {
        message = { role: 'assistant', content: words.join(''), refusal: null, annotations: [] };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id, object: 'chat.completion', created, model,
          choices: [{ index: 0, message, logprobs: null, finish_reason: call ? 'tool_calls' : 'stop' }],
          ...(omitUsage ? {} : { usage: usageJson(usage, inputOnly) }),
          service_tier: 'default', system_fingerprint: 'fp_fake',
        }),
      );
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const u = includeUsage ? { usage: null } : {};
    const base = { id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fake' };
    // Each chunk is flushed before the next step, so that a cut comes after the chunks have really left.
    let frameId = 0;
    const idLine = () => (b.kind === 'ok' && b.ids === true ? `id: ${++frameId}\n` : '');
    const send = (o: unknown) => flushed(res, `${idLine()}data: ${JSON.stringify(o)}\n\n`);
    const comments = b.kind === 'ok' ? (b.comments ?? []) : [];
    for (const c of comments) await flushed(res, `: ${c}\n\n`);
    const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...u });
    // The deltas after the role chunk (each one counts for waitForChunks).
    let deltas: Record<string, unknown>[];
    if (call && b.kind === 'tool' && b.unindexed === true) {
      const whole = (c: (typeof calls)[number]) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } });
      await send(choice({ role: 'assistant', tool_calls: [whole(call)] }));
      deltas = calls.slice(1).map((c) => ({ tool_calls: [whole(c)] }));
    } else if (call) {
      // As OpenAI streams a call: the role and the call's head (index, id, type, name, empty arguments) together,
      // then the arguments in fragments.
      await send(choice({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }], refusal: null }));
      deltas = call.fragments.map((a) => ({ tool_calls: [{ index: 0, function: { arguments: a } }] }));
      // Each further call: its head (index, id, type, name, empty arguments), then its argument fragments.
      calls.slice(1).forEach((c, k) => {
        const index = k + 1;
        deltas.push({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
        deltas.push(...c.fragments.map((a) => ({ tool_calls: [{ index, function: { arguments: a } }] })));
      });
    } else if (b.kind === 'reasoning') {
      // As DeepSeek streams it: reasoning_content deltas (content null), then content deltas (reasoning_content null).
      await send(choice({ role: 'assistant', content: null, reasoning_content: '' }));
      deltas = [...reasoning.map((r) => ({ content: null, reasoning_content: r })), ...words.map((w) => ({ content: w, reasoning_content: null }))];
    } else {
      await send(choice({ role: 'assistant', content: '', refusal: null }));
      const limit = b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error' ? b.chunks : words.length;
      deltas = Array.from({ length: limit }, (_, i) => ({ content: words[i % words.length] }));
    }
    for (const d of deltas) {
      if (b.kind === 'ok' && b.chunkDelayMs) await new Promise((r) => setTimeout(r, b.chunkDelayMs));
      if (res.destroyed) return;
      await send(choice(d));
      if (d === deltas[0]) for (const c of comments) await flushed(res, `: ${c}\n\n`);
      sentChunks.sent();
    }
    if (b.kind === 'stall') return; // the socket stays open, silent
    if (b.kind === 'cut') {
      res.socket?.destroy();
      return;
    }
    if (res.destroyed) return;
    if (b.kind === 'stream-error') {
      res.end(`data: ${JSON.stringify({ error: { message: b.message ?? 'The server had an error while processing your request.', type: 'server_error', param: null, code: b.code ?? 'server_error' } })}\n\n`);
      return;
    }
    await send(choice({}, call ? 'tool_calls' : 'stop'));
    if (includeUsage && !omitUsage) await send({ ...base, choices: [], usage: usageJson(usage, inputOnly) });
    res.end('data: [DONE]\n\n');
  };

  const { port, close } = await listenLoopback(t, handle, (err, res) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: (err as Error).message } }));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    next: (...b) => queue.push(...b),
    answerWith: (fn) => {
      decide = fn;
    },
    waitForChunks: (n) => sentChunks.waitFor(n),
    get aborted() {
      return aborted;
    },
    setResponseHeaders: (h) => {
      responseHeaders = { ...h };
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
