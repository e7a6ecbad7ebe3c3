// A fake OpenAI Responses upstream (`POST /v1/responses`) on a real socket (127.0.0.1, port 0), stopped at teardown.
// It speaks the wire format as OpenAI does:
//
// - `Authorization: Bearer <key>` is checked; without it, or with another key, 401 with OpenAI's error body.
// - The request is validated the way the API does it, so a gateway bug shows up as the 400 OpenAI would give:
//   unknown top-level parameters, a missing model / input, malformed tools or input_image parts, max_output_tokens
//   below 16, `reasoning` for a model that does not reason, `temperature` / `top_p` for one that does, and
//   `include: ['reasoning.encrypted_content']` for a non-reasoning model. Reasoning models are the o-series and
//   gpt-5 (`isReasoningModel`).
// - Non-streamed: one JSON `response` object (id resp_..., object 'response', status, model, output items, usage).
// - Streamed (`stream: true`): SSE frames `event: <type>\ndata: <json>\n\n`, every payload with its `type` and an
//   increasing `sequence_number` from 0: response.created, response.in_progress, then per output item
//   output_item.added ... output_item.done (a message: content_part.added, output_text.delta..., output_text.done,
//   content_part.done; a reasoning item: reasoning_summary_part.added, reasoning_summary_text.delta...,
//   reasoning_summary_text.done, reasoning_summary_part.done; a function call: function_call_arguments.delta...,
//   function_call_arguments.done), and response.completed with the whole response and its usage. No `[DONE]`:
//   the Responses API does not send one.
// - Reasoning items carry `encrypted_content` when the request includes 'reasoning.encrypted_content' (as the
//   API does with store: false).
//
// Usage (DEFAULT_USAGE), the same on every answer, chosen so that every bucket is distinguishable:
//   input_tokens 40 of which input_tokens_details.cached_tokens 16, output_tokens 25 of which
//   output_tokens_details.reasoning_tokens 10, total_tokens 65
//   -> buckets: input 40 - 16 = 24, cached 16, cache write null (not reported), output 25 - 10 = 15, reasoning 10;
//      total 24 + 16 + 15 + 10 = 65.
//
// `junk: true` (ok, stall, cut) adds what proxies in front of an upstream add: a `: keep-alive` comment after
// response.in_progress (which a gateway forwards as a comment: docs/translation.md) and a `data: [DONE]` after the last
// event sent (which it must not forward to a client whose format has no [DONE]).
//
// Tests script what it does next with `next(...)` (when the queue is empty: 'ok'); it records every request.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenLoopback } from './loopback.js';

export interface FakeResponsesUsage {
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
}

/** input 40 (16 cached), output 25 (10 reasoning): buckets input 24, cached 16, output 15, reasoning 10, total 65. */
export const DEFAULT_USAGE: FakeResponsesUsage = { input_tokens: 40, cached_tokens: 16, output_tokens: 25, reasoning_tokens: 10 };
export const DEFAULT_WORDS = ['Hello', ' from', ' the', ' Responses', ' fake'];
export const DEFAULT_TEXT = DEFAULT_WORDS.join('');
export const DEFAULT_SUMMARY = ['Weighing', ' the', ' question'];
export const DEFAULT_ARGUMENTS = '{"city":"Paris","unit":"celsius"}';
export const UPSTREAM_KEY = 'sk-resp-upstream-secret';

/**
 * Events of the default text stream, numbered from 1: created, in_progress, output_item.added, content_part.added,
 * five output_text.delta (events 5-9), output_text.done, content_part.done, output_item.done, response.completed.
 * So `{ kind: 'stall', events: 6 }` sends two deltas ("Hello from") and stops.
 */
export const TEXT_STREAM_EVENTS = 13;

export type Behaviour =
  | { kind: 'ok'; words?: string[]; usage?: FakeResponsesUsage; delayMs?: number; chunkDelayMs?: number; junk?: boolean }
  /**
   * A function_call item for a function tool of the request (`name`, else the first one); 500 without tools. `more`:
   * the arguments of further calls of the same tool in the same response (parallel tool calls), one item each.
   */
  | { kind: 'tool'; name?: string; arguments?: string; usage?: FakeResponsesUsage; more?: string[] }
  /** Stream the first `events` events of the text answer, then `response.failed` (status failed, `code`), then end. */
  | { kind: 'stream-error'; events: number; code?: string; message?: string }
  /** A reasoning item with a summary, then the message. */
  | { kind: 'reasoning'; summary?: string[]; words?: string[]; usage?: FakeResponsesUsage }
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Stream the first `events` events of the text answer, then nothing more (the socket stays open). */
  | { kind: 'stall'; events: number; junk?: boolean }
  /**
   * Stream the first `events` events of the text answer, then drop the connection in the middle of the chunked body;
   * `clean`: end the HTTP response properly instead (the stream just stops before response.completed).
   */
  | { kind: 'cut'; events: number; clean?: boolean; junk?: boolean }
  /** The text answer with response.completed sent twice, then response.done (non-streamed: a plain answer). */
  | { kind: 'duplicate-terminal'; words?: string[]; usage?: FakeResponsesUsage };

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

export interface FakeResponses {
  /** base_url for the provider config (ends in /v1). */
  readonly baseUrl: string;
  readonly port: number;
  readonly received: Received[];
  /** Queue behaviours for the next requests; when the queue is empty, 'ok' with defaults. */
  next(...b: Behaviour[]): void;
  /**
   * What to answer when the queue is empty (default: 'ok'), decided from the request: for a real client that sends
   * a varying number of requests (a CLI agent's tool round), where a fixed queue cannot stay in step.
   */
  answerWith(decide: (r: Received) => Behaviour): void;
  /** Behaviours queued and not yet used. */
  readonly pending: number;
  /** Resolves once `n` SSE events have been written in total (all requests). */
  waitForEvents(n: number): Promise<void>;
  /** How many responses the gateway hung up on before they were finished. */
  readonly aborted: number;
  /**
   * Headers sent on every later answer, whatever its behaviour (e.g. the provider's rate-limit headers, which
   * docs/quota.md lists); `{}` (the default) sends none.
   */
  setResponseHeaders(h: Record<string, string>): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** The model names the fake treats as reasoning models (o-series, gpt-5 family). */
export const isReasoningModel = (model: string): boolean => /^(o\d|gpt-5)/.test(model);

/** OpenAI's error body. */
export function openaiError(message: string, type: string, param: string | null = null, code: string | null = null): Json {
  return { error: { message, type, param, code } };
}

// `client_metadata` is not in the API reference, but the API takes it: Codex sends it on every request.
const KNOWN_PARAMS = new Set([
  'background', 'client_metadata', 'conversation', 'include', 'input', 'instructions', 'max_output_tokens', 'max_tool_calls', 'metadata',
  'model', 'parallel_tool_calls', 'previous_response_id', 'prompt', 'prompt_cache_key', 'prompt_cache_retention',
  'reasoning', 'safety_identifier', 'service_tier', 'store', 'stream', 'stream_options', 'temperature', 'text',
  'tool_choice', 'tools', 'top_logprobs', 'top_p', 'truncation', 'user',
]);
const INCLUDABLE = new Set([
  'code_interpreter_call.outputs', 'computer_call_output.output.image_url', 'file_search_call.results',
  'message.input_image.image_url', 'message.output_text.logprobs', 'reasoning.encrypted_content', 'web_search_call.action.sources',
]);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

class BadRequest extends Error {
  constructor(message: string, readonly param: string | null, readonly code: string | null) {
    super(message);
  }
}
const bad = (message: string, param: string | null = null, code: string | null = null): never => {
  throw new BadRequest(message, param, code);
};
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function validateImage(c: Json, path: string): void {
  const url = c.image_url;
  if (typeof url !== 'string' && typeof c.file_id !== 'string') bad(`Missing required parameter: '${path}.image_url'.`, `${path}.image_url`, 'missing_required_parameter');
  if (c.detail !== undefined && !['low', 'high', 'auto'].includes(String(c.detail))) bad(`Invalid value: '${String(c.detail)}'. Supported values are: 'low', 'high', and 'auto'.`, `${path}.detail`, 'invalid_value');
  if (typeof url !== 'string') return;
  if (url.startsWith('data:')) {
    const m = /^data:(image\/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+=*)$/.exec(url);
    if (!m) bad(`Invalid 'image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid value.`, `${path}.image_url`, 'invalid_value');
    const bytes = Buffer.from(m![2]!, 'base64');
    if (m![1] === 'image/png' && !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) bad('You uploaded an unsupported image. Please make sure your image is valid.', null, 'invalid_image_format');
  } else if (!/^https?:\/\//.test(url)) {
    bad(`Invalid 'image_url'. Expected a valid URL, but got a value with an invalid format.`, `${path}.image_url`, 'invalid_value');
  }
}

const USER_PARTS = new Set(['input_text', 'input_image', 'input_file', 'input_audio']);

function validateInput(input: unknown): void {
  if (typeof input === 'string') return;
  if (!Array.isArray(input)) return bad(`Invalid type for 'input': expected one of a string or array of input items, but got ${typeof input} instead.`, 'input', 'invalid_type');
  input.forEach((item: unknown, i) => {
    const p = `input[${i}]`;
    if (!isObj(item)) bad(`Invalid type for '${p}': expected an object.`, p, 'invalid_type');
    const it = item as Json;
    const type = it.type ?? 'message';
    if (type === 'message') {
      if (!['user', 'assistant', 'system', 'developer'].includes(String(it.role))) bad(`Invalid value: '${String(it.role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`, `${p}.role`, 'invalid_value');
      if (typeof it.content === 'string') return;
      if (!Array.isArray(it.content)) bad(`Missing required parameter: '${p}.content'.`, `${p}.content`, 'missing_required_parameter');
      (it.content as unknown[]).forEach((c, j) => {
        const cp = `${p}.content[${j}]`;
        if (!isObj(c)) bad(`Invalid type for '${cp}': expected an object.`, cp, 'invalid_type');
        const part = c as Json;
        const allowed = it.role === 'assistant' ? new Set(['output_text', 'refusal']) : USER_PARTS;
        if (!allowed.has(String(part.type))) bad(`Invalid value: '${String(part.type)}'. Supported values are: ${[...allowed].map((s) => `'${s}'`).join(', ')}.`, `${cp}.type`, 'invalid_value');
        if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text !== 'string') bad(`Missing required parameter: '${cp}.text'.`, `${cp}.text`, 'missing_required_parameter');
        if (part.type === 'input_image') validateImage(part, cp);
      });
    } else if (type === 'function_call') {
      for (const k of ['call_id', 'name', 'arguments']) if (typeof it[k] !== 'string') bad(`Missing required parameter: '${p}.${k}'.`, `${p}.${k}`, 'missing_required_parameter');
    } else if (type === 'function_call_output') {
      if (typeof it.call_id !== 'string') bad(`Missing required parameter: '${p}.call_id'.`, `${p}.call_id`, 'missing_required_parameter');
      if (it.output === undefined) bad(`Missing required parameter: '${p}.output'.`, `${p}.output`, 'missing_required_parameter');
    } else if (type === 'reasoning') {
      if (!Array.isArray(it.summary)) bad(`Missing required parameter: '${p}.summary'.`, `${p}.summary`, 'missing_required_parameter');
    } else if (type !== 'item_reference') {
      bad(`Invalid value: '${String(type)}'.`, `${p}.type`, 'invalid_value');
    }
  });
}

function validate(body: Json): void {
  for (const k of Object.keys(body)) if (!KNOWN_PARAMS.has(k)) bad(`Unknown parameter: '${k}'.`, k, 'unknown_parameter');
  if (typeof body.model !== 'string' || body.model === '') bad(`Missing required parameter: 'model'.`, 'model', 'missing_required_parameter');
  const model = body.model as string;
  const reasoning = isReasoningModel(model);
  if (body.input === undefined) bad(`Missing required parameter: 'input'.`, 'input', 'missing_required_parameter');
  validateInput(body.input);
  if (body.max_output_tokens !== undefined) {
    const m = body.max_output_tokens;
    if (typeof m !== 'number' || !Number.isInteger(m)) bad(`Invalid type for 'max_output_tokens': expected an integer.`, 'max_output_tokens', 'invalid_type');
    if ((m as number) < 16) bad(`Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${String(m)} instead.`, 'max_output_tokens', 'integer_below_min_value');
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) bad(`Invalid type for 'tools': expected an array.`, 'tools', 'invalid_type');
    (body.tools as unknown[]).forEach((tool, i) => {
      if (!isObj(tool)) return bad(`Invalid type for 'tools[${i}]': expected an object.`, `tools[${i}]`, 'invalid_type');
      if (tool.type === undefined) bad(`Missing required parameter: 'tools[${i}].type'.`, `tools[${i}].type`, 'missing_required_parameter');
      if (tool.type !== 'function') return;
      if (typeof tool.name !== 'string') bad(`Missing required parameter: 'tools[${i}].name'.`, `tools[${i}].name`, 'missing_required_parameter');
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name as string)) bad(`Invalid 'tools[${i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `tools[${i}].name`, 'invalid_value');
      if (tool.parameters !== undefined && tool.parameters !== null && !isObj(tool.parameters)) bad(`Invalid type for 'tools[${i}].parameters': expected an object.`, `tools[${i}].parameters`, 'invalid_type');
      if ('function' in tool) bad(`Unknown parameter: 'tools[${i}].function'.`, `tools[${i}].function`, 'unknown_parameter');
    });
  }
  if (body.include !== undefined) {
    if (!Array.isArray(body.include)) bad(`Invalid type for 'include': expected an array.`, 'include', 'invalid_type');
    for (const v of body.include as unknown[]) if (!INCLUDABLE.has(String(v))) bad(`Invalid value: '${String(v)}'.`, 'include', 'invalid_value');
    if (!reasoning && (body.include as unknown[]).includes('reasoning.encrypted_content')) bad('Encrypted content is not supported with this model.', 'include', 'unsupported_parameter');
  }
  if (body.reasoning !== undefined && body.reasoning !== null) {
    if (!isObj(body.reasoning)) bad(`Invalid type for 'reasoning': expected an object.`, 'reasoning', 'invalid_type');
    const r = body.reasoning as Json;
    if (!reasoning && r.effort !== undefined) bad(`Unsupported parameter: 'reasoning.effort' is not supported with this model.`, 'reasoning.effort', 'unsupported_parameter');
    if (r.effort !== undefined && r.effort !== null && !['none', 'minimal', 'low', 'medium', 'high', 'xhigh'].includes(String(r.effort))) {
      bad(`Invalid value: '${String(r.effort)}'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'.`, 'reasoning.effort', 'invalid_value');
    }
  }
  if (reasoning) {
    for (const k of ['temperature', 'top_p']) if (body[k] !== undefined && body[k] !== null) bad(`Unsupported parameter: '${k}' is not supported with this model.`, k, 'unsupported_parameter');
  }
  if (body.store !== undefined && typeof body.store !== 'boolean') bad(`Invalid type for 'store': expected a boolean.`, 'store', 'invalid_type');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') bad(`Invalid type for 'stream': expected a boolean.`, 'stream', 'invalid_type');
}

// ---- answers -------------------------------------------------------------------------------------------------

interface Answer {
  readonly output: Json[];
  readonly usage: FakeResponsesUsage;
  /** Text deltas for each message item, summary deltas for each reasoning item, argument deltas for each call. */
  readonly chunks: string[][];
}

function usageJson(u: FakeResponsesUsage): Json {
  return {
    input_tokens: u.input_tokens,
    input_tokens_details: { cached_tokens: u.cached_tokens },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens },
    total_tokens: u.input_tokens + u.output_tokens,
  };
}

const outputText = (text: string): Json => ({ type: 'output_text', annotations: [], logprobs: [], text });

/** The response object as the API returns it, echoing the request's settings. */
function responseObject(id: string, body: Json, status: string, output: Json[], usage: Json | null): Json {
  const model = String(body.model);
  const reasoning = isObj(body.reasoning) ? body.reasoning : {};
  return {
    id,
    object: 'response',
    created_at: 1731000000,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: isReasoningModel(model) ? { effort: reasoning.effort ?? 'medium', summary: reasoning.summary ?? null } : { effort: null, summary: null },
    safety_identifier: null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: isReasoningModel(model) ? 1 : (body.temperature ?? 1),
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: isReasoningModel(model) ? 1 : (body.top_p ?? 1),
    truncation: 'disabled',
    usage,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

// ---- the server ------------------------------------------------------------------------------------------------

export async function startFakeResponses(t: { teardown(fn: () => unknown): void }, opts: { key?: string } = {}): Promise<FakeResponses> {
  let responseHeaders: Record<string, string> = {};
  const key = opts.key ?? UPSTREAM_KEY;
  const queue: Behaviour[] = [];
  let decide: ((r: Received) => Behaviour) | undefined;
  const received: Received[] = [];
  let eventsSent = 0;
  let aborted = 0;
  let counter = 0;
  const waiters: { n: number; resolve: () => void }[] = [];

  const sentEvent = () => {
    eventsSent++;
    for (const w of [...waiters]) {
      if (eventsSent >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const hex = (n: number, len: number): string => n.toString(16).padStart(len, '0');

  function answerFor(b: Behaviour, body: Json, n: number): Answer {
    const stem = `${hex(n, 8)}fa4e0ff1ce${hex(n * 7919, 8)}`;
    const words = 'words' in b && b.words ? b.words : DEFAULT_WORDS;
    const usage = 'usage' in b && b.usage ? b.usage : DEFAULT_USAGE;
    const encrypted = Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
    const output: Json[] = [];
    const chunks: string[][] = [];
    if (b.kind === 'reasoning') {
      const summary = b.summary ?? DEFAULT_SUMMARY;
      output.push({
        id: `rs_${stem}`,
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: summary.join('') }],
        ...(encrypted ? { encrypted_content: `gAAAAAB-fake-encrypted-${n}` } : {}),
      });
      chunks.push(summary);
    }
    if (b.kind === 'tool') {
      const tools = Array.isArray(body.tools) ? (body.tools as Json[]).filter((x) => isObj(x) && x.type === 'function') : [];
      const tool = b.name === undefined ? tools[0] : tools.find((x) => x.name === b.name);
      if (!tool) throw new Error(`behaviour 'tool': the request has no function tool ${b.name ?? ''}`);
      [b.arguments ?? DEFAULT_ARGUMENTS, ...(b.more ?? [])].forEach((args, i) => {
        const suffix = i === 0 ? '' : `_${i + 1}`;
        output.push({ id: `fc_${stem}${suffix}`, type: 'function_call', status: 'completed', arguments: args, call_id: `call_${hex(n, 4)}Fake${stem.slice(0, 8)}${suffix}`, name: tool.name });
        const mid = Math.ceil(args.length / 2);
        chunks.push([args.slice(0, mid), args.slice(mid)]);
      });
    } else {
      output.push({ id: `msg_${stem}`, type: 'message', status: 'completed', content: [outputText(words.join(''))], role: 'assistant' });
      chunks.push(words);
    }
    return { output, usage, chunks };
  }

  /** Every SSE event of a streamed answer, in order; payloads without sequence_number (added when sent). */
  function streamEvents(id: string, body: Json, a: Answer): Json[] {
    const ev: Json[] = [];
    const initial = responseObject(id, body, 'in_progress', [], null);
    ev.push({ type: 'response.created', response: initial }, { type: 'response.in_progress', response: initial });
    a.output.forEach((item, o) => {
      const chunks = a.chunks[o]!;
      const itemId = item.id as string;
      if (item.type === 'message') {
        const text = chunks.join('');
        ev.push({ type: 'response.output_item.added', output_index: o, item: { ...item, status: 'in_progress', content: [] } });
        ev.push({ type: 'response.content_part.added', item_id: itemId, output_index: o, content_index: 0, part: outputText('') });
        for (const d of chunks) ev.push({ type: 'response.output_text.delta', item_id: itemId, output_index: o, content_index: 0, delta: d, logprobs: [], obfuscation: 'xyz' });
        ev.push({ type: 'response.output_text.done', item_id: itemId, output_index: o, content_index: 0, text, logprobs: [] });
        ev.push({ type: 'response.content_part.done', item_id: itemId, output_index: o, content_index: 0, part: outputText(text) });
      } else if (item.type === 'reasoning') {
        const text = chunks.join('');
        ev.push({ type: 'response.output_item.added', output_index: o, item: { ...item, summary: [] } });
        ev.push({ type: 'response.reasoning_summary_part.added', item_id: itemId, output_index: o, summary_index: 0, part: { type: 'summary_text', text: '' } });
        for (const d of chunks) ev.push({ type: 'response.reasoning_summary_text.delta', item_id: itemId, output_index: o, summary_index: 0, delta: d, obfuscation: 'xyz' });
        ev.push({ type: 'response.reasoning_summary_text.done', item_id: itemId, output_index: o, summary_index: 0, text });
        ev.push({ type: 'response.reasoning_summary_part.done', item_id: itemId, output_index: o, summary_index: 0, part: { type: 'summary_text', text } });
      } else {
        ev.push({ type: 'response.output_item.added', output_index: o, item: { ...item, status: 'in_progress', arguments: '' } });
        for (const d of chunks) ev.push({ type: 'response.function_call_arguments.delta', item_id: itemId, output_index: o, delta: d, obfuscation: 'xyz' });
        ev.push({ type: 'response.function_call_arguments.done', item_id: itemId, output_index: o, name: item.name, arguments: item.arguments });
      }
      ev.push({ type: 'response.output_item.done', output_index: o, item });
    });
    ev.push({ type: 'response.completed', response: responseObject(id, body, 'completed', a.output, usageJson(a.usage)) });
    return ev;
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const raw = Buffer.concat(parts).toString('utf8');
    const n = ++counter;
    const requestId = `req_${hex(n, 8)}fa4e${hex(n * 31, 20)}`;
    const json = (status: number, o: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': requestId, 'openai-version': '2020-10-01', ...headers });
      res.end(JSON.stringify(o, null, 2));
    };
    let body: Json = {};
    let isJson = false;
    try {
      const parsed = JSON.parse(raw || 'null') as unknown;
      if (isObj(parsed)) {
        body = parsed;
        isJson = true;
      }
    } catch {
      isJson = false;
    }
    received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    for (const [k, v] of Object.entries(responseHeaders)) res.setHeader(k, v);
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
    });

    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/responses') {
      return json(404, openaiError(`Invalid URL (${req.method ?? ''} ${req.url ?? ''})`, 'invalid_request_error'));
    }
    const auth = req.headers.authorization;
    if (auth === undefined || !/^Bearer /i.test(auth)) {
      return json(401, openaiError("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", 'invalid_request_error'));
    }
    if (auth.slice(7) !== key) {
      const k = auth.slice(7);
      return json(401, openaiError(`Incorrect API key provided: ${k.slice(0, 3)}*****${k.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', null, 'invalid_api_key'));
    }
    if (!isJson) {
      return json(400, openaiError("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", 'invalid_request_error'));
    }
    try {
      validate(body);
    } catch (e) {
      if (e instanceof BadRequest) return json(400, openaiError(e.message, 'invalid_request_error', e.param, e.code));
      throw e;
    }

    const b: Behaviour = queue.shift() ?? decide?.(received.at(-1)!) ?? { kind: 'ok' };
    if (b.kind === 'error') {
      return json(b.status, b.body ?? openaiError(`fake error ${b.status}`, 'server_error'), b.headers ?? {});
    }
    if (b.kind === 'ok' && b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (res.destroyed) return;
    const id = `resp_${hex(n, 8)}fa4e0ff1ce${hex(n * 104729, 32)}`;
    const a = answerFor(b, body, n);

    if (body.stream !== true) {
      if (b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error') throw new Error(`behaviour ${b.kind} needs a streamed request`);
      return json(200, responseObject(id, body, 'completed', a.output, usageJson(a.usage)));
    }

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId, 'openai-version': '2020-10-01' });
    const junk = 'junk' in b && b.junk === true;
    let events = streamEvents(id, body, a);
    if (b.kind === 'duplicate-terminal') {
      const completed = events.at(-1)!;
      events = [...events, completed, { type: 'response.done', response: completed.response }];
    }
    const limit = b.kind === 'stall' || b.kind === 'cut' || b.kind === 'stream-error' ? Math.min(b.events, events.length) : events.length;
    let seq = 0;
    for (let i = 0; i < limit; i++) {
      if (b.kind === 'ok' && b.chunkDelayMs && events[i]!.type === 'response.output_text.delta') await new Promise((r) => setTimeout(r, b.chunkDelayMs));
      if (res.destroyed) return;
      const e = events[i]!;
      const { type, ...rest } = e;
      res.write(`event: ${String(type)}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...rest })}\n\n`);
      sentEvent();
      if (junk && type === 'response.in_progress') res.write(': keep-alive\n\n');
    }
    if (junk) res.write('data: [DONE]\n\n');
    if (b.kind === 'stream-error') {
      const failed = responseObject(id, body, 'failed', [], null);
      failed.error = { code: b.code ?? 'server_error', message: b.message ?? 'The model failed to generate a response.' };
      res.end(`event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: seq++, response: failed })}\n\n`);
      sentEvent();
      return;
    }
    if (b.kind === 'stall') return; // the socket stays open, silent
    if (b.kind === 'cut' && !b.clean) {
      // Let the events written so far leave (the first write of a response is corked until the next tick), then
      // close the connection in the middle of the chunked body.
      await new Promise((r) => setTimeout(r, 25));
      res.socket?.destroy();
      return;
    }
    res.end();
  };

  const { port, close } = await listenLoopback(t, handle, (err, res) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify(openaiError(`fake upstream: ${(err as Error).message}`, 'server_error')));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    received,
    next: (...b) => queue.push(...b),
    answerWith: (fn) => {
      decide = fn;
    },
    get pending() {
      return queue.length;
    },
    waitForEvents: (n) => new Promise<void>((resolve) => (eventsSent >= n ? resolve() : waiters.push({ n, resolve }))),
    get aborted() {
      return aborted;
    },
    setResponseHeaders: (h) => {
      responseHeaders = { ...h };
    },
    close,
  };
}

/** A provider config row (format openai-responses) for the fake upstream. */
export function respProvider(baseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Fake OpenAI Responses',
    group: 'paid',
    format: 'openai-responses',
    base_url: baseUrl,
    auth: { type: 'api_key', key: UPSTREAM_KEY },
    price: { input: 2, output: 8, cached: 0.5 },
    timeouts: { connect_s: 2, stall_s: 1 },
    models: {
      'o4-mini': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'openai' },
      'gpt-4.1': { kind: 'llm', capabilities: ['tools', 'vision'] },
    },
    ...extra,
  };
}
