// Failure paths against a Gemini upstream (test/helpers/fake-gemini.ts, stall_s 1): the upstream stalls or cuts a
// stream, and the client gets its own format's terminal error (the raw bytes are read with undici `request` for
// the Chat, Anthropic, Responses and Gemini endpoints, and the Gemini SDK is checked to raise); an upstream 429
// with retry-after reaches every client, streamed and not, with its status and retry-after. Every case leaves a
// failure row.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { DEFAULT_WORDS, GEMINI_PRICE, geminiProvider, startFakeGemini, type GeminiBehaviour } from '../helpers/fake-gemini.js';
import { bucketsOf, rowOf } from '../helpers/clients.js';

const up = await startFakeGemini(t);
const gw = await startApp(t, { providers: { gem: geminiProvider(up) } });
const MODEL = 'gem/gemini-2.5-flash';
const STALL_MS = 1000; // geminiProvider: timeouts.stall_s 1

// A stream broken after 2 of its 5 chunks: Gemini's cumulative usage on chunk 2 is prompt 30 (12 cached),
// candidates floor(8 x 2 / 5) = 3, thoughts 6 (fake-gemini.ts). That last report is the upstream's own count of what
// it produced, so the row keeps it: input 18, cached 12, cache write null, output 3, reasoning 6, total 39,
// usage_source 'reported'; cost (18 x 2 + 12 x 0.5 + 3 x 12 + 6 x 12) / 1e6 = 150 / 1e6.
const PARTIAL = [18, 12, null, 3, 6, 39];
const PARTIAL_COST = (18 * GEMINI_PRICE.input + 12 * GEMINI_PRICE.cached + 3 * GEMINI_PRICE.output + 6 * GEMINI_PRICE.output) / 1e6;

function checkBrokenRow(t: Test, row: Record<string, unknown>, endpoint: string, errorType: string | RegExp): void {
  t.match(row, { endpoint, model: MODEL, status: 'failure', error_type: errorType, usage_source: 'reported' }, 'a failure row');
  t.equal(Boolean(row.stream), true);
  t.same(bucketsOf(row), PARTIAL, "the upstream's last cumulative usage report, counted once");
  t.equal(Number(row.cost), PARTIAL_COST);
}

type Break = Extract<GeminiBehaviour, { kind: 'stall' | 'cut' }>['kind'];
const BREAKS: { kind: Break; code: RegExp; minMs: number }[] = [
  { kind: 'stall', code: /^TOLLGATE_ERR_UPSTREAM_STALL$/, minMs: STALL_MS - 100 },
  // The upstream closes the socket mid-body: the stream never saw its finishReason.
  { kind: 'cut', code: /^TOLLGATE_ERR_UPSTREAM_(PROTOCOL|CONNECT)$/, minMs: 0 },
];

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

for (const br of BREAKS) {
  t.test(`the upstream ${br.kind === 'stall' ? 'stalls' : 'cuts the stream'} after 2 chunks`, async (t) => {
    await t.test('openai chat, raw SSE: the text so far, then the error event, no [DONE]', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const started = Date.now();
      const res = await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
      t.equal(res.statusCode, 200, 'the stream had started');
      const text = await res.body.text();
      const elapsed = Date.now() - started;
      t.ok(elapsed >= br.minMs && elapsed < 5000, `ended in ${elapsed} ms`);
      t.notMatch(text, /\[DONE\]/, 'no [DONE] after a failure');
      const frames = text.trim().split('\n\n');
      t.ok(frames.every((f) => f.startsWith('data: ')), 'only data frames');
      const last = JSON.parse(frames.at(-1)!.replace(/^data: /, '')) as { error?: { code: string; message: string; type: string } };
      t.match(last.error, { code: br.code, type: 'upstream_error', message: String }, 'the last event is the error event');
      const content = frames.slice(0, -1).map((f) => (JSON.parse(f.replace(/^data: /, '')) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '').join('');
      t.equal(content, DEFAULT_WORDS.slice(0, 2).join(''), 'the two chunks of text came first');
      t.equal(up.received.at(-1)!.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
      checkBrokenRow(t, await rowOf(gw, String(res.headers['x-request-id'])), 'chat.completions', br.code);
    });

    await t.test('openai chat SDK: the stream raises', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      let text = '';
      const err = await (async () => {
        for await (const c of await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })) {
          text += c.choices[0]?.delta.content ?? '';
        }
      })().then(() => null, (e: unknown) => e);
      t.ok(err instanceof OpenAI.APIError, 'APIError from the error event');
      t.match((err as InstanceType<typeof OpenAI.APIError>).error, { code: br.code });
      t.equal(text, DEFAULT_WORDS.slice(0, 2).join(''));
    });

    await t.test('gemini, raw: the chunks so far, then the error body Gemini would write', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const res = await post(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'client' });
      t.equal(res.statusCode, 200);
      const text = await res.body.text();
      // Gemini client to Gemini provider is passed through: the upstream's CRLF framing reaches the client as sent.
      const lines = text.split(/\r?\n/).filter((l) => l !== '');
      const last = JSON.parse(lines.at(-1)!) as { error?: { code: number; status: string; message: string } };
      t.match(last.error, { code: br.kind === 'stall' ? 504 : 502, status: br.kind === 'stall' ? 'DEADLINE_EXCEEDED' : 'UNAVAILABLE', message: String }, 'ends with a bare Gemini error body');
      const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.replace(/^data: /, '')) as { candidates?: { content: { parts: { text?: string }[] }; finishReason?: string }[] });
      t.equal(chunks.map((c) => c.candidates?.[0]?.content.parts.map((p) => p.text ?? '').join('') ?? '').join(''), DEFAULT_WORDS.slice(0, 2).join(''));
      t.notOk(chunks.some((c) => c.candidates?.[0]?.finishReason), 'no finishReason: the answer did not finish');
      checkBrokenRow(t, await rowOf(gw, String(res.headers['x-request-id'])), 'generate_content', br.code);
    });

    await t.test('gemini SDK (@google/genai): the stream raises an ApiError', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const genai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });
      let text = '';
      const err = await (async () => {
        for await (const c of await genai.models.generateContentStream({ model: MODEL, contents: 'hi' })) text += c.text ?? '';
      })().then(() => null, (e: unknown) => e);
      t.ok(err instanceof ApiError, `ApiError (${String(err)})`);
      t.equal((err as ApiError).status, br.kind === 'stall' ? 504 : 502);
      t.equal(text, DEFAULT_WORDS.slice(0, 2).join(''), 'the text before the failure was delivered');
    });

    await t.test('anthropic, raw: event: error last, no message_stop', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const res = await post('/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true }, { 'x-api-key': 'client' });
      const text = await res.body.text();
      const frames = text.trim().split('\n\n');
      t.match(frames.at(-1), /^event: error\ndata: /, 'the last event is an error event');
      t.match(JSON.parse(frames.at(-1)!.split('\ndata: ')[1]!), { type: 'error', error: { type: String, message: String } });
      t.notMatch(text, /message_stop/);
      checkBrokenRow(t, await rowOf(gw, String(res.headers['x-request-id'])), 'messages', br.code);
    });

    await t.test('openai responses, raw: response.failed, then one [DONE]', async (t) => {
      up.next({ kind: br.kind, chunks: 2 });
      const res = await post('/v1/responses', { model: MODEL, input: 'hi', stream: true }, { authorization: 'Bearer client' });
      const text = await res.body.text();
      t.notMatch(text, /response\.completed/);
      const frames = text.trim().split('\n\n');
      t.equal(frames.at(-1), 'data: [DONE]', 'one [DONE] at the very end');
      t.equal(frames.filter((f) => f === 'data: [DONE]').length, 1);
      t.match(frames.at(-2), /^event: response\.failed\n/, 'response.failed before it');
      checkBrokenRow(t, await rowOf(gw, String(res.headers['x-request-id'])), 'responses', br.code);
    });
  });
}

t.test('a non-streamed answer cut or stalled halfway through its JSON: 502 / 504, failure row', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  for (const [kind, status] of [['cut', 502], ['stall', 504]] as const) {
    up.next({ kind, chunks: 0 });
    const err = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (e: unknown) => e);
    t.ok(err instanceof OpenAI.APIError, kind);
    t.equal((err as InstanceType<typeof OpenAI.APIError>).status, status, `${kind}: ${status}`);
    const id = (err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-request-id') ?? '';
    t.match(await rowOf(gw, id), { status: 'failure', http_status: status, stream: false, usage_source: 'none' });
  }
});

// ------------------------------------------------------------------------------------------------ 429

const RETRY_AFTER = '17';
const QUOTA = 'Resource has been exhausted (e.g. check quota).';
const rateLimited = (): GeminiBehaviour => ({
  kind: 'error',
  status: 429,
  message: QUOTA,
  details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${RETRY_AFTER}s` }],
  headers: { 'retry-after': RETRY_AFTER },
});

async function check429Row(t: Test, requestId: string | null | undefined, endpoint: string, stream: boolean): Promise<void> {
  t.ok(requestId, 'x-request-id on the error');
  const row = await rowOf(gw, requestId ?? '');
  t.match(row, { endpoint, model: MODEL, status: 'failure', http_status: 429, error_type: '429', usage_source: 'none' });
  t.equal(Boolean(row.stream), stream);
  t.same(bucketsOf(row), [null, null, null, null, null, 0], 'no usage');
  t.equal(Number(row.cost), 0);
}

for (const stream of [false, true]) {
  t.test(`an upstream 429 with retry-after reaches every client (${stream ? 'streamed' : 'non-streamed'})`, async (t) => {
    await t.test('openai chat SDK', async (t) => {
      up.next(rateLimited());
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const err = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream }).then(() => null, (e: unknown) => e);
      t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof OpenAI.APIError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
      t.match(e.error, { code: 429, status: 'RESOURCE_EXHAUSTED', message: QUOTA }, "Gemini's error body, passed through");
      await check429Row(t, e.headers?.get('x-request-id'), 'chat.completions', stream);
    });

    await t.test('openai chat, raw', async (t) => {
      up.next(rateLimited());
      const res = await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream });
      t.equal(res.statusCode, 429);
      t.equal(res.headers['retry-after'], RETRY_AFTER);
      t.match(String(res.headers['content-type']), /^application\/json/);
      t.match(await res.body.json(), { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ retryDelay: `${RETRY_AFTER}s` }] } });
      await check429Row(t, String(res.headers['x-request-id']), 'chat.completions', stream);
    });

    await t.test('openai responses SDK', async (t) => {
      up.next(rateLimited());
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const err = await client.responses.create({ model: MODEL, input: 'hi', stream }).then(() => null, (e: unknown) => e);
      t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof OpenAI.APIError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
      await check429Row(t, e.headers?.get('x-request-id'), 'responses', stream);
    });

    await t.test('anthropic SDK', async (t) => {
      up.next(rateLimited());
      const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
      const err = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream }).then(() => null, (e: unknown) => e);
      t.ok(err instanceof Anthropic.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof Anthropic.APIError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
      await check429Row(t, e.headers?.get('x-request-id'), 'messages', stream);
    });

    await t.test('gemini SDK (@google/genai)', async (t) => {
      up.next(rateLimited());
      // The SDK's ApiError carries the status only; the headers are read from its fetch.
      let last: Response | undefined;
      const genai = new GoogleGenAI({
        apiKey: 'unused',
        httpOptions: { baseUrl: gw.url, fetch: async (input: string | URL | Request, init?: RequestInit) => (last = await fetch(input, init)) },
      });
      const call = stream
        ? (async () => {
            for await (const c of await genai.models.generateContentStream({ model: MODEL, contents: 'hi' })) void c;
          })()
        : genai.models.generateContent({ model: MODEL, contents: 'hi' });
      const err = await call.then(() => null, (e: unknown) => e);
      t.ok(err instanceof ApiError, 'ApiError');
      t.equal((err as ApiError).status, 429);
      t.match((err as ApiError).message, /RESOURCE_EXHAUSTED/);
      t.equal(last?.status, 429);
      t.equal(last?.headers.get('retry-after'), RETRY_AFTER, 'retry-after');
      t.equal(up.received.at(-1)!.path, `/v1beta/models/gemini-2.5-flash${stream ? ':streamGenerateContent?alt=sse' : ':generateContent'}`);
      await check429Row(t, last?.headers.get('x-request-id'), 'generate_content', stream);
    });
  });
}
