// The four client formats as raw HTTP: how each asks for a text or a tool answer, and how its answer (JSON or SSE)
// reads back as text, tool calls, a finish and the terminal event. Raw bytes (undici `request`), not the SDKs: the
// cases check the format itself; the SDKs are covered by test/integration/.

import { request } from 'undici';
import { TOOL_NAME, TOOL_SCHEMA, type Json } from './providers.js';

export type ClientName = 'chat' | 'responses' | 'messages' | 'gemini';

export interface Ask {
  readonly model: string;
  readonly stream: boolean;
  readonly tools?: boolean;
  readonly maxTokens?: number;
  /** Replaces the default one-turn conversation (in the client's own format). */
  readonly history?: unknown;
}

export interface Answer {
  readonly text: string;
  readonly calls: { name: string; args: unknown }[];
  /** The finish in the client's vocabulary (Responses: the response status). */
  readonly finish: string | null;
  /** The stream (or body) ended with the format's normal end, or with its terminal error. */
  readonly end: 'done' | 'error' | 'none';
}

export interface ClientFormat {
  readonly name: ClientName;
  /** The row's `endpoint`. */
  readonly endpoint: string;
  /** The finish of a text answer and of a tool answer. */
  readonly finishes: { readonly text: string; readonly tool: string };
  build(a: Ask): { path: string; body: Json };
  parse(text: string, stream: boolean): Answer;
}

const USER = 'What is the weather in Paris and in Tokyo?';
const frames = (text: string): string[] => text.split(/\r?\n\r?\n/).filter((f) => f.trim() !== '');
const dataOf = (frame: string): string | undefined => frame.split(/\r?\n/).find((l) => l.startsWith('data: '))?.slice(6);
const eventOf = (frame: string): string | undefined => frame.split(/\r?\n/).find((l) => l.startsWith('event: '))?.slice(7);
const json = (s: string | undefined): Json | undefined => {
  if (s === undefined) return undefined;
  try {
    return JSON.parse(s) as Json;
  } catch {
    return undefined;
  }
};
const parseArgs = (s: unknown): unknown => (typeof s === 'string' ? (s === '' ? {} : JSON.parse(s)) : s);

export const chat: ClientFormat = {
  name: 'chat',
  endpoint: 'chat.completions',
  finishes: { text: 'stop', tool: 'tool_calls' },
  build: (a) => ({
    path: '/v1/chat/completions',
    body: {
      model: a.model, stream: a.stream, messages: a.history ?? [{ role: 'user', content: USER }],
      ...(a.tools ? { tools: [{ type: 'function', function: { name: TOOL_NAME, description: 'Weather', parameters: TOOL_SCHEMA } }] } : {}),
      ...(a.maxTokens === undefined ? {} : { max_tokens: a.maxTokens }),
    },
  }),
  parse(text, stream) {
    if (!stream) {
      const b = JSON.parse(text) as { choices: { message: { content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] }; finish_reason: string }[] };
      const c = b.choices[0]!;
      return { text: c.message.content ?? '', calls: (c.message.tool_calls ?? []).map((x) => ({ name: x.function.name, args: parseArgs(x.function.arguments) })), finish: c.finish_reason, end: 'done' };
    }
    let out = '';
    let finish: string | null = null;
    let end: Answer['end'] = 'none';
    const calls: { name: string; args: string }[] = [];
    for (const f of frames(text)) {
      const d = dataOf(f);
      if (d === '[DONE]') {
        end = 'done';
        continue;
      }
      const o = json(d);
      if (o === undefined) continue;
      if (o.error !== undefined) {
        end = 'error';
        continue;
      }
      const c = (o.choices as { delta?: Json; finish_reason?: string | null }[] | undefined)?.[0];
      if (!c) continue;
      if (typeof c.delta?.content === 'string') out += c.delta.content;
      for (const tc of (c.delta?.tool_calls as { index: number; function?: { name?: string; arguments?: string } }[] | undefined) ?? []) {
        calls[tc.index] ??= { name: '', args: '' };
        calls[tc.index]!.name += tc.function?.name ?? '';
        calls[tc.index]!.args += tc.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
    return { text: out, calls: calls.map((c) => ({ name: c.name, args: parseArgs(c.args) })), finish, end };
  },
};

export const responses: ClientFormat = {
  name: 'responses',
  endpoint: 'responses',
  finishes: { text: 'completed', tool: 'completed' },
  build: (a) => ({
    path: '/v1/responses',
    body: {
      model: a.model, stream: a.stream, input: a.history ?? USER,
      ...(a.tools ? { tools: [{ type: 'function', name: TOOL_NAME, description: 'Weather', parameters: TOOL_SCHEMA }] } : {}),
      ...(a.maxTokens === undefined ? {} : { max_output_tokens: a.maxTokens }),
    },
  }),
  parse(text, stream) {
    const read = (r: { status: string; output: Json[] }, out: string | null): Answer => {
      let t = '';
      const calls: Answer['calls'] = [];
      for (const item of r.output) {
        if (item.type === 'message') for (const c of item.content as { type: string; text: string }[]) if (c.type === 'output_text') t += c.text;
        if (item.type === 'function_call') calls.push({ name: String(item.name), args: parseArgs(item.arguments) });
      }
      return { text: out ?? t, calls, finish: r.status, end: 'done' };
    };
    if (!stream) return read(JSON.parse(text) as { status: string; output: Json[] }, null);
    let out = '';
    let last: Answer | null = null;
    let end: Answer['end'] = 'none';
    for (const f of frames(text)) {
      const o = json(dataOf(f));
      if (!o) continue;
      if (o.type === 'response.output_text.delta') out += String(o.delta);
      if (o.type === 'response.completed') last = read(o.response as { status: string; output: Json[] }, out);
      if (o.type === 'response.failed' || o.type === 'error') end = 'error';
    }
    if (last && end !== 'error') return last;
    return { text: out, calls: [], finish: null, end };
  },
};

export const messages: ClientFormat = {
  name: 'messages',
  endpoint: 'messages',
  finishes: { text: 'end_turn', tool: 'tool_use' },
  build: (a) => ({
    path: '/v1/messages',
    body: {
      model: a.model, stream: a.stream, max_tokens: a.maxTokens ?? 1000, messages: a.history ?? [{ role: 'user', content: USER }],
      ...(a.tools ? { tools: [{ name: TOOL_NAME, description: 'Weather', input_schema: TOOL_SCHEMA }] } : {}),
    },
  }),
  parse(text, stream) {
    if (!stream) {
      const b = JSON.parse(text) as { content: Json[]; stop_reason: string };
      return {
        text: b.content.filter((c) => c.type === 'text').map((c) => String(c.text)).join(''),
        calls: b.content.filter((c) => c.type === 'tool_use').map((c) => ({ name: String(c.name), args: c.input })),
        finish: b.stop_reason, end: 'done',
      };
    }
    let out = '';
    let finish: string | null = null;
    let end: Answer['end'] = 'none';
    const calls: { name: string; args: string }[] = [];
    const blocks: Record<number, { name: string; args: string }> = {};
    for (const f of frames(text)) {
      const ev = eventOf(f);
      const o = json(dataOf(f));
      if (!o) continue;
      if (ev === 'error') end = 'error';
      if (ev === 'message_stop') end = 'done';
      if (o.type === 'content_block_start' && (o.content_block as Json).type === 'tool_use') {
        blocks[Number(o.index)] = { name: String((o.content_block as Json).name), args: '' };
        calls.push(blocks[Number(o.index)]!);
      }
      if (o.type === 'content_block_delta') {
        const d = o.delta as Json;
        if (d.type === 'text_delta') out += String(d.text);
        if (d.type === 'input_json_delta') blocks[Number(o.index)]!.args += String(d.partial_json);
      }
      if (o.type === 'message_delta') finish = String((o.delta as Json).stop_reason);
    }
    return { text: out, calls: calls.map((c) => ({ name: c.name, args: parseArgs(c.args) })), finish, end };
  },
};

export const gemini: ClientFormat = {
  name: 'gemini',
  endpoint: 'generate_content',
  finishes: { text: 'STOP', tool: 'STOP' },
  build: (a) => ({
    path: `/v1beta/models/${a.model}:${a.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    body: {
      contents: a.history ?? [{ role: 'user', parts: [{ text: USER }] }],
      ...(a.tools ? { tools: [{ functionDeclarations: [{ name: TOOL_NAME, description: 'Weather', parameters: TOOL_SCHEMA }] }] } : {}),
      ...(a.maxTokens === undefined ? {} : { generationConfig: { maxOutputTokens: a.maxTokens } }),
    },
  }),
  parse(text, stream) {
    const chunks = stream ? frames(text).map((f) => json(dataOf(f))) : [JSON.parse(text) as Json];
    let out = '';
    let finish: string | null = null;
    let end: Answer['end'] = 'none';
    const calls: Answer['calls'] = [];
    for (const c of chunks) {
      if (!c) continue;
      if (c.error !== undefined) {
        end = 'error';
        continue;
      }
      const cand = (c.candidates as { content?: { parts?: Json[] }; finishReason?: string }[] | undefined)?.[0];
      for (const p of cand?.content?.parts ?? []) {
        if (typeof p.text === 'string' && p.thought !== true) out += p.text;
        if (p.functionCall) calls.push({ name: String((p.functionCall as Json).name), args: (p.functionCall as Json).args });
      }
      if (cand?.finishReason) {
        finish = cand.finishReason;
        if (end !== 'error') end = 'done';
      }
    }
    return { text: out, calls, finish, end };
  },
};

export const CLIENTS: readonly ClientFormat[] = [chat, responses, messages, gemini];

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly requestId: string;
  readonly ms: number;
}

/** POST a client request to the gateway and read the whole answer. */
export async function send(base: string, client: ClientFormat, a: Ask, opts: { signal?: AbortSignal } = {}): Promise<Reply> {
  const { path, body } = client.build(a);
  return post(base, path, body, opts);
}

export async function post(base: string, path: string, body: unknown, opts: { signal?: AbortSignal } = {}): Promise<Reply> {
  const started = Date.now();
  const res = await request(`${base}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, requestId: String(res.headers['x-request-id']), ms: Date.now() - started };
}
