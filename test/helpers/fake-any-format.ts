// A fake upstream that speaks each wire format the gateway forwards to (OpenAI Chat, Responses, Anthropic Messages,
// Gemini), told by the request's path, with one small answer in each: text "hi", usage 11 input / 3 output tokens,
// whole (JSON; Gemini's streamGenerateContent without alt=sse: a JSON array of chunks) or as the format's event
// stream. The first path segment of the provider's base_url picks how it misbehaves (`mode`):
//
//   ok        the answer the request asks for (an event stream for a streamed request, else JSON)
//   json      always the whole JSON answer, a stream request included (a misbehaving upstream)
//   gzip, br, deflate, x-gzip, gzip-br
//             the answer `ok` gives, sent in that content-encoding (gzip-br: gzip, then br); a stream in pieces
//   identity  the answer with `content-encoding: identity`
//   error-gzip
//             a 429 whose JSON error body is gzip-encoded, with a retry-after
//   bomb      200 MB of zeros gzip-compressed (about 200 KB), as a JSON answer: a gzip bomb
//   zstd      `content-encoding: zstd` (bytes the gateway cannot decode)
//   error-zstd
//             a 429 in `content-encoding: zstd`, with a retry-after
//   bad-gzip  `content-encoding: gzip` with bytes that are not gzip
//   error-bad-gzip
//             a 429 in `content-encoding: gzip` whose bytes are not gzip, with a retry-after

import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { brotliCompressSync, createGzip, deflateSync, gzipSync } from 'node:zlib';
import { listenLoopback, type Loopback } from './loopback.js';

export type Format = 'chat' | 'responses' | 'messages' | 'gemini';

const USAGE = { chat: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 }, io: { input_tokens: 11, output_tokens: 3, total_tokens: 14 } };
const GEMINI_USAGE = { promptTokenCount: 11, candidatesTokenCount: 3, totalTokenCount: 14 };

const chatWhole = { id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: USAGE.chat };
const responsesWhole = {
  id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: 'm',
  output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi', annotations: [] }] }],
  usage: USAGE.io,
};
const messagesWhole = {
  id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 11, output_tokens: 3 },
};
const geminiChunks = [
  { candidates: [{ content: { role: 'model', parts: [{ text: 'h' }] }, index: 0 }], usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 1, totalTokenCount: 12 } },
  { candidates: [{ content: { role: 'model', parts: [{ text: 'i' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: GEMINI_USAGE, modelVersion: 'm' },
];

const sse = (frames: readonly (readonly [string | null, unknown])[], end = '', eol = '\n'): string =>
  frames.map(([event, data]) => `${event === null ? '' : `event: ${event}${eol}`}data: ${JSON.stringify(data)}${eol}${eol}`).join('') + end;

const chunk = (delta: object, finish: string | null) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const STREAMS: Readonly<Record<Format, string>> = {
  chat: sse([[null, chunk({ role: 'assistant', content: 'hi' }, null)], [null, chunk({}, 'stop')], [null, { ...chunk({}, null), choices: [], usage: USAGE.chat }]], 'data: [DONE]\n\n'),
  responses: sse([
    ['response.created', { type: 'response.created', response: { ...responsesWhole, status: 'in_progress', output: [], usage: null } }],
    ['response.output_text.delta', { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'hi' }],
    ['response.completed', { type: 'response.completed', response: responsesWhole }],
  ]),
  messages: sse([
    ['message_start', { type: 'message_start', message: { ...messagesWhole, content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }],
    ['message_stop', { type: 'message_stop' }],
  ]),
  gemini: sse(geminiChunks.map((c) => [null, c] as const), '', '\r\n'),
};

/** The format a request path is for. */
export function formatOf(path: string): Format {
  if (path.includes('/chat/completions')) return 'chat';
  if (path.includes('/responses')) return 'responses';
  if (path.includes('/messages')) return 'messages';
  return 'gemini';
}

/** What `ok` answers a request: its body text and content type. */
export function answerFor(format: Format, path: string, body: Record<string, unknown>, wantStream: boolean): { text: string; type: string } {
  const gemini = format === 'gemini';
  const stream = wantStream && (gemini ? path.includes('alt=sse') : body.stream === true);
  if (stream) return { text: STREAMS[format], type: 'text/event-stream' };
  const whole = gemini ? (path.includes(':streamGenerateContent') ? geminiChunks : { ...geminiChunks[1], candidates: [{ ...geminiChunks[1]!.candidates[0], content: { role: 'model', parts: [{ text: 'hi' }] } }] })
    : format === 'chat' ? chatWhole : format === 'responses' ? responsesWhole : messagesWhole;
  return { text: JSON.stringify(whole), type: 'application/json' };
}

const BOMB_BYTES = 200 * 1024 * 1024;

/** 200 MB of zeros, gzip-compressed, made a megabyte at a time (the test process never holds the 200 MB). */
async function gzipBomb(): Promise<Buffer> {
  const gz = createGzip({ level: 9 });
  const parts: Buffer[] = [];
  gz.on('data', (c: Buffer) => parts.push(c));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let n = 0; n < BOMB_BYTES; n += zeros.length) if (!gz.write(zeros)) await once(gz, 'drain');
  gz.end();
  await once(gz, 'end');
  return Buffer.concat(parts);
}

const ENCODE: Readonly<Record<string, (b: Buffer) => Buffer>> = {
  gzip: (b) => gzipSync(b), 'x-gzip': (b) => gzipSync(b), br: (b) => brotliCompressSync(b), deflate: (b) => deflateSync(b),
  'gzip, br': (b) => brotliCompressSync(gzipSync(b)),
};

export interface FakeAnyFormat extends Loopback {
  /**
   * What the fake sent last (before any encoding), how many requests it had, and the last one's `accept` header, the
   * raw text of its body and its path.
   */
  readonly sent: { text: string; requests: number; accept: string; received: string; path: string };
  /** The gzip bomb's compressed size. */
  readonly bombBytes: number;
}

export async function startFakeAnyFormat(t: { teardown(fn: () => unknown): void }): Promise<FakeAnyFormat> {
  const bomb = await gzipBomb();
  const sent = { text: '', requests: 0, accept: '', received: '', path: '' };
  const up = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    for await (const c of req) raw += String(c);
    sent.requests++;
    sent.accept = String(req.headers.accept ?? '');
    sent.received = raw;
    sent.path = req.url!;
    const body = (raw === '' ? {} : JSON.parse(raw)) as Record<string, unknown>;
    const path = req.url!;
    const mode = path.split('/')[1]!;
    const format = formatOf(path);
    const { text, type } = answerFor(format, path, body, mode !== 'json');
    sent.text = text;
    switch (mode) {
      case 'ok':
      case 'json':
        res.writeHead(200, { 'content-type': type });
        res.end(text);
        return;
      case 'identity':
        res.writeHead(200, { 'content-type': type, 'content-encoding': 'identity' });
        res.end(text);
        return;
      case 'error-gzip': {
        const error = JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } });
        sent.text = error;
        res.writeHead(429, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'retry-after': '7' });
        res.end(gzipSync(error));
        return;
      }
      case 'bomb':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(bomb);
        return;
      case 'zstd':
        res.writeHead(200, { 'content-type': type, 'content-encoding': 'zstd' });
        res.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]));
        return;
      case 'error-zstd':
        res.writeHead(429, { 'content-type': 'application/json', 'content-encoding': 'zstd', 'retry-after': '30' });
        res.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]));
        return;
      case 'bad-gzip':
        res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip' });
        res.end('this is not gzip at all');
        return;
      case 'error-bad-gzip':
        res.writeHead(429, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'retry-after': '30' });
        res.end('this is not gzip at all');
        return;
      default: {
        const encoding = mode === 'gzip-br' ? 'gzip, br' : mode;
        const encoded = ENCODE[encoding]!(Buffer.from(text));
        res.writeHead(200, { 'content-type': type, 'content-encoding': encoding });
        // In three pieces: the gateway decodes as the bytes come, not only once they are all there.
        const third = Math.ceil(encoded.length / 3);
        for (let i = 0; i < encoded.length; i += third) await new Promise<void>((r) => res.write(encoded.subarray(i, i + third), () => r()));
        res.end();
      }
    }
  }, (err, res) => res.destroy(err as Error));
  return { ...up, sent, bombBytes: bomb.length };
}

/** A provider of `format` on the fake, misbehaving as `mode` says. */
export function fakeProvider(port: number, mode: string, format: 'openai' | 'openai-responses' | 'anthropic' | 'gemini'): Record<string, unknown> {
  const base = format === 'gemini' ? '/v1beta' : format === 'anthropic' ? '' : '/v1';
  return {
    group: 'paid', format, base_url: `http://127.0.0.1:${port}/${mode}${base}`, auth: { type: 'api_key', key: 'sk-test-upstream' },
    price: { input: 1, output: 1 }, models: { m: {} },
  };
}
