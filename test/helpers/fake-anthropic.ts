// A fake Anthropic Messages upstream on a real socket (127.0.0.1, port 0), closed at teardown. It speaks
// POST /v1/messages as Anthropic does:
//
// - Headers: `x-api-key` must be the configured key, else 401 `authentication_error`; `anthropic-version` must be
//   present, else 400 `invalid_request_error` (what the API answers). Errors always have Anthropic's shape
//   `{type: 'error', error: {type, message}, request_id}` and a `request-id` header.
// - The body is checked the way the API checks it (400 `invalid_request_error` otherwise): model, max_tokens
//   (integer >= 1), messages (non-empty, roles user/assistant, content a string or known blocks), images as base64
//   with a supported media type or a url, tools with an object input_schema (or a server tool: a versioned type
//   such as web_search_20250305), thinking budget_tokens >= 1024 and below max_tokens, tool_choice any/tool not
//   combined with thinking.
// - POST /v1/messages/count_tokens: `{input_tokens}`, one token per 4 characters of the JSON messages and system.
// - Non-streamed: `{id: 'msg_...', type: 'message', role: 'assistant', model, content, stop_reason,
//   stop_sequence: null, usage}`.
// - Streamed (`stream: true`): `message_start` (usage with the input-side counts and the placeholder output 1),
//   per block `content_block_start`, deltas (`text_delta`, `thinking_delta` + `signature_delta`, `input_json_delta`
//   fragments, the first one empty as the API sends), `content_block_stop`; a `ping` after the first block start;
//   then `message_delta` (stop_reason and the cumulative output usage) and `message_stop`.
//
// Usage (FAKE_USAGE) is chosen so that every bucket is distinguishable by hand:
//   input_tokens 20 (not cached), cache_read_input_tokens 5, cache_creation_input_tokens 7, output_tokens 9
//   (thinking included, as Anthropic counts it). The gateway should record input 20, cached 5, cache_write 7,
//   output 9, reasoning null, total 41.
//
// Tests script what it does next with `next(...)` (FIFO; 'ok' with defaults when empty). Every request is recorded
// (path, headers, body), including the ones it refuses. Stall/cut counts SSE events as written: with the default
// text answer, event 1 is message_start, 2 content_block_start, 3 ping, 4.. the text deltas.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { flushed, listenLoopback } from './loopback.js';

export const FAKE_ANTHROPIC_KEY = 'sk-ant-fake-upstream-key-123';

export interface FakeAnthropicUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  output_tokens: number;
  /** Of cache_creation_input_tokens, those written for an hour (`cache_creation.ephemeral_1h_input_tokens`); 0 if absent. */
  cache_creation_1h?: number;
  /** Web searches run (`server_tool_use.web_search_requests`: in the whole answer's usage, and a stream's message_delta). */
  web_searches?: number;
  /** `usage.service_tier` (default 'standard'). */
  service_tier?: string;
}

/** input 20, cache read 5, cache write 7, output 9: see the header. */
export const FAKE_USAGE: FakeAnthropicUsage = { input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 7, output_tokens: 9 };
export const DEFAULT_TEXT = ['Hello', ' from', ' the', ' fake', ' Claude'];
export const DEFAULT_THINKING = ['Let me think', ' about this', ' carefully.'];
export const DEFAULT_SIGNATURE = 'EqQBCgIYAhIMfakeSignatureForTestsOnlyzLoky3dl1pkiMOYds7ohZsWqJ3lkGeDWJ6Fz0HUuUCtSWRmQDFY3y7mnZzsYyqDoAHQ==';
export const DEFAULT_TOOL_INPUT = { location: 'Paris, France', unit: 'celsius' };
export const DEFAULT_TOOL_PREAMBLE = 'Let me check that.';

interface Common {
  usage?: FakeAnthropicUsage;
  /** message_delta repeats the input-side counts too (newer API versions do), not only output_tokens. */
  fullDeltaUsage?: boolean;
  /** Wait this long before answering. */
  delayMs?: number;
  /** A streamed answer waits this long before each event (a slow model). */
  eventDelayMs?: number;
}

export type AnthropicBehaviour =
  | ({ kind: 'ok'; text?: string[] } & Common)
  /** Call a tool from the request (`name`, else the first one): a tool_use block with `input`, stop_reason tool_use.
   * `preamble` ('' for none) is a text block before it. `more`: the inputs of further tool_use blocks of the same tool
   * (parallel tool use), ids suffixed `_2`, `_3`, ... */
  | ({ kind: 'tool_use'; name?: string; input?: Record<string, unknown>; preamble?: string; id?: string; more?: Record<string, unknown>[] } & Common)
  /** A thinking block with its signature, then the text. */
  | ({ kind: 'thinking'; thinking?: string[]; signature?: string; text?: string[] } & Common)
  /** An HTTP error in Anthropic's shape (`body` replaces the default one). */
  | { kind: 'error'; status: number; type?: string; message?: string; body?: unknown; headers?: Record<string, string> }
  /** Write `events` SSE events of the normal answer (for a non-streamed request: the headers and half the JSON),
   * then nothing more; the socket stays open. */
  | ({ kind: 'stall'; events: number; answer?: 'ok' | 'tool_use' | 'thinking' } & Common)
  /** Write `events` events, then close: `clean` ends the HTTP response properly (the server ended the stream early),
   * otherwise the socket is destroyed mid-response. */
  | ({ kind: 'cut'; events: number; clean?: boolean; answer?: 'ok' | 'tool_use' | 'thinking' } & Common)
  /** Write `events` events, then an `event: error` (overloaded_error by default), then end the response. */
  | ({ kind: 'stream_error'; events: number; type?: string; message?: string } & Common);

export interface AnthropicReceived {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

export interface FakeAnthropic {
  /** The origin, for base_url (Anthropic's base_url has no /v1). */
  readonly url: string;
  readonly received: AnthropicReceived[];
  /** The body of the last request received. */
  last(): Record<string, unknown>;
  next(...b: AnthropicBehaviour[]): void;
  /**
   * What to answer when the queue is empty (default: 'ok'), decided from the request: for a real client that sends
   * a varying number of requests (a CLI agent's tool round), where a fixed queue cannot stay in step.
   */
  answerWith(decide: (r: AnthropicReceived) => AnthropicBehaviour): void;
  /** Resolves once `n` SSE events have been written in total (across requests). */
  waitForEvents(n: number): Promise<void>;
  readonly eventsSent: number;
  /** Responses the gateway hung up on before they finished. */
  readonly aborted: number;
  /**
   * Headers sent on every later answer, whatever its behaviour (e.g. the provider's rate-limit headers, which
   * docs/quota.md lists); `{}` (the default) sends none.
   */
  setResponseHeaders(h: Record<string, string>): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

class ApiError extends Error {
  constructor(readonly status: number, readonly type: string, message: string) {
    super(message);
  }
}
const invalid = (message: string): never => {
  throw new ApiError(400, 'invalid_request_error', message);
};

/** Server tool types (versioned), as the Messages API names them. */
const SERVER_TOOL = /^(web_search|web_fetch|code_execution|bash|text_editor|computer|memory)_\d{8}$/;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error',
};

function checkBlock(b: unknown, at: string): void {
  if (!isObj(b)) invalid(`${at}: Input should be an object`);
  const blk = b as Json;
  switch (blk.type) {
    case 'text':
      if (typeof blk.text !== 'string') invalid(`${at}.text: Field required`);
      if (blk.text === '') invalid(`${at}: text content blocks must be non-empty`);
      return;
    case 'image': {
      const s = blk.source;
      if (!isObj(s)) invalid(`${at}.source: Field required`);
      const src = s as Json;
      if (src.type === 'base64') {
        if (!IMAGE_TYPES.has(String(src.media_type))) invalid(`${at}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
        if (typeof src.data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(src.data)) invalid(`${at}.source.data: invalid base64 data`);
      } else if (src.type === 'url') {
        if (typeof src.url !== 'string' || !/^https?:\/\//.test(src.url)) invalid(`${at}.source.url: must be an http(s) URL`);
      } else if (src.type !== 'file') invalid(`${at}.source.type: Input tag '${String(src.type)}' does not match any of the expected tags`);
      return;
    }
    case 'document':
    case 'tool_use':
    case 'tool_result':
    case 'thinking':
    case 'redacted_thinking':
      return;
    default:
      invalid(`${at}.type: Input tag '${String(blk.type)}' does not match any of the expected tags`);
  }
}

/** The checks the Messages API makes that a translating gateway could get wrong. */
function validate(body: Json): void {
  if (typeof body.model !== 'string' || body.model === '') invalid('model: Field required');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) invalid('max_tokens: Field required');
  if (!Array.isArray(body.messages) || body.messages.length === 0) invalid('messages: at least one message is required');
  (body.messages as unknown[]).forEach((m, i) => {
    if (!isObj(m)) invalid(`messages.${i}: Input should be an object`);
    const msg = m as Json;
    if (msg.role !== 'user' && msg.role !== 'assistant') invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof msg.content === 'string') {
      if (msg.content === '') invalid(`messages.${i}: user messages must have non-empty content`);
    } else if (Array.isArray(msg.content)) {
      msg.content.forEach((b, j) => checkBlock(b, `messages.${i}.content.${j}`));
    } else invalid(`messages.${i}.content: Input should be a valid list`);
  });
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) invalid('tools: Input should be a valid list');
    (body.tools as unknown[]).forEach((tool, i) => {
      if (!isObj(tool) || typeof tool.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) invalid(`tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      // A server tool (web_search_20250305, ...) has a versioned type and no input_schema.
      const type = (tool as Json).type;
      if (type !== undefined && type !== 'custom') {
        if (typeof type !== 'string' || !SERVER_TOOL.test(type)) invalid(`tools.${i}.type: Input tag '${String(type)}' does not match any of the expected tags`);
        return;
      }
      const schema = (tool as Json).input_schema;
      if (!isObj(schema) || schema.type !== 'object') invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
    });
  }
  const thinking = body.thinking;
  if (thinking !== undefined) {
    if (!isObj(thinking)) invalid('thinking: Input should be an object');
    const th = thinking as Json;
    if (th.type === 'enabled') {
      const b = th.budget_tokens;
      if (typeof b !== 'number' || !Number.isInteger(b) || b < 1024) invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
      if ((b as number) >= (body.max_tokens as number)) invalid('`max_tokens` must be greater than `thinking.budget_tokens`');
      const choice = body.tool_choice;
      if (isObj(choice) && (choice.type === 'any' || choice.type === 'tool')) invalid('Thinking may not be enabled when tool_choice forces tool use.');
      if (body.temperature !== undefined && body.temperature !== 1) invalid('`temperature` may only be set to 1 when thinking is enabled');
      if (body.top_k !== undefined) invalid('`top_k` must be unset when thinking is enabled');
    } else if (th.type !== 'disabled' && th.type !== 'adaptive') invalid(`thinking.type: Input tag '${String(th.type)}' does not match any of the expected tags`);
  }
}

// ---------------------------------------------------------------------------------------------------- answers

type Block =
  | { type: 'text'; pieces: string[] }
  | { type: 'thinking'; pieces: string[]; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Json };

function toolName(body: Json, wanted: string | undefined): string {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  if (wanted !== undefined) {
    if (!tools.some((t) => t.name === wanted)) invalid(`fake: the model wants to call ${wanted}, which the request does not define`);
    return wanted;
  }
  const first = tools[0];
  if (first === undefined || typeof first.name !== 'string') return invalid('fake: tool_use needs a tool in the request');
  return first.name;
}

function answerBlocks(kind: 'ok' | 'tool_use' | 'thinking', b: AnthropicBehaviour, body: Json, n: number): { blocks: Block[]; stop: string } {
  const o = b as Partial<{ text: string[]; thinking: string[]; signature: string; name: string; input: Json; preamble: string; id: string; more: Json[] }>;
  switch (kind) {
    case 'ok':
      return { blocks: [{ type: 'text', pieces: o.text ?? DEFAULT_TEXT }], stop: 'end_turn' };
    case 'thinking':
      return {
        blocks: [
          { type: 'thinking', pieces: o.thinking ?? DEFAULT_THINKING, signature: o.signature ?? DEFAULT_SIGNATURE },
          { type: 'text', pieces: o.text ?? DEFAULT_TEXT },
        ],
        stop: 'end_turn',
      };
    case 'tool_use': {
      const preamble = o.preamble ?? DEFAULT_TOOL_PREAMBLE;
      const blocks: Block[] = preamble === '' ? [] : [{ type: 'text', pieces: [preamble] }];
      const id = o.id ?? `toolu_01Fake${String(n).padStart(4, '0')}Qw90lq917835`;
      const name = toolName(body, o.name);
      blocks.push({ type: 'tool_use', id, name, input: o.input ?? DEFAULT_TOOL_INPUT });
      (o.more ?? []).forEach((input, i) => blocks.push({ type: 'tool_use', id: `${id}_${i + 2}`, name, input }));
      return { blocks, stop: 'tool_use' };
    }
  }
}

function finalBlock(b: Block): Json {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.pieces.join('') };
    case 'thinking':
      return { type: 'thinking', thinking: b.pieces.join(''), signature: b.signature };
    case 'tool_use':
      return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
  }
}

/** JSON text in about three fragments, as input_json_delta streams it (split inside strings too). */
function fragments(json: string): string[] {
  const n = Math.max(1, Math.ceil(json.length / 3));
  const out: string[] = [''];
  for (let i = 0; i < json.length; i += n) out.push(json.slice(i, i + n));
  return out;
}

function streamEvents(id: string, model: string, blocks: Block[], stop: string, u: FakeAnthropicUsage, fullDelta: boolean): [string, Json][] {
  const ev: [string, Json][] = [];
  ev.push(['message_start', {
    type: 'message_start',
    message: {
      id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
      usage: {
        input_tokens: u.input_tokens, cache_creation_input_tokens: u.cache_creation_input_tokens, cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation: cacheCreation(u),
        output_tokens: 1, service_tier: u.service_tier ?? 'standard',
      },
    },
  }]);
  blocks.forEach((b, index) => {
    const shell = b.type === 'text' ? { type: 'text', text: '' } : b.type === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'tool_use', id: b.id, name: b.name, input: {} };
    ev.push(['content_block_start', { type: 'content_block_start', index, content_block: shell }]);
    if (index === 0) ev.push(['ping', { type: 'ping' }]);
    if (b.type === 'text') for (const text of b.pieces) ev.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }]);
    if (b.type === 'thinking') {
      for (const thinking of b.pieces) ev.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } }]);
      ev.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } }]);
    }
    if (b.type === 'tool_use') {
      for (const partial_json of fragments(JSON.stringify(b.input))) ev.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }]);
    }
    ev.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  const usage: Json = fullDelta
    ? { input_tokens: u.input_tokens, cache_creation_input_tokens: u.cache_creation_input_tokens, cache_read_input_tokens: u.cache_read_input_tokens, output_tokens: u.output_tokens }
    : { output_tokens: u.output_tokens };
  if (u.web_searches !== undefined) usage.server_tool_use = { web_search_requests: u.web_searches };
  ev.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage }]);
  ev.push(['message_stop', { type: 'message_stop' }]);
  return ev;
}


function usageJson(u: FakeAnthropicUsage): Json {
  return {
    input_tokens: u.input_tokens, cache_creation_input_tokens: u.cache_creation_input_tokens, cache_read_input_tokens: u.cache_read_input_tokens,
    cache_creation: cacheCreation(u),
    output_tokens: u.output_tokens, service_tier: u.service_tier ?? 'standard',
    ...(u.web_searches === undefined ? {} : { server_tool_use: { web_search_requests: u.web_searches } }),
  };
}

/** The cache writes by lifetime, as the API reports them beside their sum. */
function cacheCreation(u: FakeAnthropicUsage): Json {
  const hour = u.cache_creation_1h ?? 0;
  return { ephemeral_5m_input_tokens: u.cache_creation_input_tokens - hour, ephemeral_1h_input_tokens: hour };
}

// ---------------------------------------------------------------------------------------------------- server

export async function startFakeAnthropic(t: { teardown(fn: () => unknown): void }, opts: { apiKey?: string } = {}): Promise<FakeAnthropic> {
  let responseHeaders: Record<string, string> = {};
  const apiKey = opts.apiKey ?? FAKE_ANTHROPIC_KEY;
  const queue: AnthropicBehaviour[] = [];
  let decide: ((r: AnthropicReceived) => AnthropicBehaviour) | undefined;
  const received: AnthropicReceived[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let eventsSent = 0;
  let aborted = 0;

  const sentEvent = () => {
    eventsSent++;
    for (const w of [...waiters]) {
      if (eventsSent >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const sendError = (res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}, body?: unknown) => {
    const requestId = `req_fake${String(received.length).padStart(6, '0')}`;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
    res.end(JSON.stringify(body ?? { type: 'error', error: { type, message }, request_id: requestId }));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const raw = Buffer.concat(parts).toString('utf8');
    let body: Json = {};
    let parsed = true;
    try {
      const v: unknown = JSON.parse(raw || '{}');
      if (isObj(v)) body = v;
      else parsed = false;
    } catch {
      parsed = false;
    }
    received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    for (const [k, v] of Object.entries(responseHeaders)) res.setHeader(k, v);
    const n = received.length;
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
    });
    // Taken before any check, so the queue stays in step with the requests even when one is refused.
    const b: AnthropicBehaviour = queue.shift() ?? decide?.(received.at(-1)!) ?? { kind: 'ok' };

    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')) throw new ApiError(404, 'not_found_error', `Not found: ${req.method} ${req.url}`);
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') throw new ApiError(401, 'authentication_error', 'x-api-key header is required');
    if (key !== apiKey) throw new ApiError(401, 'authentication_error', 'invalid x-api-key');
    if (typeof req.headers['anthropic-version'] !== 'string') throw new ApiError(400, 'invalid_request_error', 'anthropic-version: header is required');
    if (!parsed) invalid('There was an issue with your request body: not valid JSON');
    if (path === '/v1/messages/count_tokens') {
      // A stand-in for Anthropic's counter: one token per 4 characters of the JSON messages and system.
      if (typeof body.model !== 'string' || !Array.isArray(body.messages)) invalid('model, messages: Field required');
      const chars = JSON.stringify(body.messages).length + JSON.stringify(body.system ?? '').length;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: Math.ceil(chars / 4) }));
      return;
    }
    validate(body);

    if (b.kind === 'error') {
      sendError(res, b.status, b.type ?? ERROR_TYPES[b.status] ?? 'api_error', b.message ?? `fake ${b.status}`, b.headers, b.body);
      return;
    }
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (res.destroyed) return;

    const kind = b.kind === 'stall' || b.kind === 'cut' ? (b.answer ?? 'ok') : b.kind === 'stream_error' ? 'ok' : b.kind;
    const { blocks, stop } = answerBlocks(kind, b, body, n);
    const usage = b.usage ?? FAKE_USAGE;
    const id = `msg_01Fake${String(n).padStart(6, '0')}HCDu5LRGeP2o7s`;
    const model = String(body.model);
    const requestId = `req_fake${String(n).padStart(6, '0')}`;

    if (body.stream !== true) {
      const message = JSON.stringify({ id, type: 'message', role: 'assistant', model, content: blocks.map(finalBlock), stop_reason: stop, stop_sequence: null, usage: usageJson(usage) });
      if (b.kind === 'stall' || b.kind === 'cut') {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        await flushed(res, message.slice(0, Math.floor(message.length / 2)));
        if (b.kind === 'cut') {
          if (b.clean) res.end();
          else res.socket?.destroy();
        }
        return;
      }
      if (b.kind === 'stream_error') throw new ApiError(529, 'overloaded_error', b.message ?? 'Overloaded');
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
      res.end(message);
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId });
    const events = streamEvents(id, model, blocks, stop, usage, b.fullDeltaUsage === true);
    const limit = b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream_error' ? Math.min(b.events, events.length) : events.length;
    for (let i = 0; i < limit; i++) {
      if (res.destroyed) return;
      const [event, data] = events[i]!;
      const delay = 'eventDelayMs' in b ? b.eventDelayMs : undefined;
      if (delay) await new Promise((r) => setTimeout(r, delay));
      // Each event is flushed before the next (a socket destroyed right after a write would otherwise lose it).
      await flushed(res, `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      sentEvent();
    }
    if (b.kind === 'stall') return; // the socket stays open, silent
    if (b.kind === 'cut') {
      if (b.clean) res.end();
      else res.socket?.destroy();
      return;
    }
    if (b.kind === 'stream_error') {
      res.write(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: b.type ?? 'overloaded_error', message: b.message ?? 'Overloaded' } })}\n\n`);
      sentEvent();
    }
    res.end();
  };

  const { port, close } = await listenLoopback(t, handle, (err, res) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof ApiError) sendError(res, err.status, err.type, err.message);
    else sendError(res, 500, 'api_error', err instanceof Error ? err.message : String(err));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    last: () => received.at(-1)!.body,
    next: (...b) => queue.push(...b),
    answerWith: (fn) => {
      decide = fn;
    },
    waitForEvents: (n) => new Promise<void>((resolve) => (eventsSent >= n ? resolve() : waiters.push({ n, resolve }))),
    get eventsSent() {
      return eventsSent;
    },
    get aborted() {
      return aborted;
    },
    setResponseHeaders: (h) => {
      responseHeaders = { ...h };
    },
    close,
  };
}

/** A provider config row (format anthropic) for the fake: base_url is the origin, without /v1. */
export function fakeAnthropicProvider(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Fake Anthropic',
    group: 'paid',
    format: 'anthropic',
    base_url: url,
    auth: { type: 'api_key', key: FAKE_ANTHROPIC_KEY },
    // USD per 1M tokens, Claude Sonnet's list prices: every bucket priced differently.
    price: { input: 3, output: 15, cached: 0.3, cache_write: 3.75 },
    timeouts: { connect_s: 2, stall_s: 1 },
    models: {
      'claude-sonnet-4-5': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'anthropic-budget' },
      'claude-haiku-4-5': { kind: 'llm', capabilities: ['tools', 'vision'] },
    },
    ...extra,
  };
}
