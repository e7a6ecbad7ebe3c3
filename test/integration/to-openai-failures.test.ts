// Failure paths against an OpenAI Chat Completions upstream (test/helpers/fake-openai.ts, provider `oai`,
// timeouts.stall_s 1): the upstream stalls, or drops the connection, after two content chunks of a stream. Each
// client gets its format's terminal error, checked on the raw bytes (undici `request`): Responses `response.failed`
// followed by exactly one `data: [DONE]`; Anthropic `event: error` and no message_stop; Chat (fast path and
// translated path) the error event and no [DONE]; Gemini a bare error body. The SDKs raise or end on it. Every case
// leaves one failure row whose input is estimated from the request and output from the two streamed words
// (usage_source 'estimated'), since an OpenAI stream reports its usage only in its last chunk. Then an upstream 429 with retry-after reaches
// every client, streamed and not.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { request } from 'undici';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { startApp } from '../helpers/app.js';
import { DEFAULT_WORDS, fakeProvider, startFakeOpenAI, type Behaviour } from '../helpers/fake-openai.js';
import { bucketsOf, rowOf } from '../helpers/clients.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(up.baseUrl, {
      models: {
        o3: { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'openai' },
        'gpt-4o': { kind: 'llm', capabilities: ['tools', 'vision'] },
      },
    }),
  },
});

const MODEL = 'oai/o3';
const STALL_MS = 1000; // fakeProvider: timeouts.stall_s 1
const CHUNKS = 2;
const SENT = DEFAULT_WORDS.slice(0, CHUNKS); // 'Hello', ' from'
// No usage was reported (OpenAI sends it after the finish chunk), so the row estimates it (src/wire/estimate.ts,
// o3: o200k_base): every client sends one user message 'hi', so the input is 3 + 'user' + 'hi' + 3 priming; the
// output is the text of the two streamed words. Cost at fakeProvider's prices (input 2.5, output 10 USD per 1M).
const INPUT = 3 + countTokens('user') + countTokens('hi') + 3;
const OUTPUT = countTokens(SENT.join(''));
const ESTIMATED = [INPUT, null, null, OUTPUT, null, INPUT + OUTPUT];
const ESTIMATED_COST = (INPUT * 2.5 + OUTPUT * 10) / 1e6;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
}

async function raw(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Raw> {
  const started = Date.now();
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, ms: Date.now() - started };
}

const frames = (text: string) => text.split('\n\n').filter((f) => f.trim() !== '');
const dataOf = (frame: string): Record<string, unknown> => JSON.parse(frame.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>;

type Break = 'stall' | 'cut';
const BREAKS: { kind: Break; label: string; code: RegExp }[] = [
  { kind: 'stall', label: 'the upstream stalls after two content chunks', code: /^TOLLGATE_ERR_UPSTREAM_STALL$/ },
  // The socket is dropped in the middle of the chunked body: undici reports a socket error (connect) or the stream
  // ends unfinished (protocol); both are fair names.
  { kind: 'cut', label: 'the upstream drops the connection after two content chunks', code: /^TOLLGATE_ERR_UPSTREAM_(PROTOCOL|CONNECT)$/ },
];

function checkTiming(t: Test, br: (typeof BREAKS)[number], r: Raw): void {
  if (br.kind === 'stall') t.ok(r.ms >= STALL_MS - 100 && r.ms < 5000, `ended by the 1 s stall timeout (${r.ms} ms)`);
  else t.ok(r.ms < STALL_MS, `ended at once (${r.ms} ms), not by the stall timeout`);
}

async function checkRow(t: Test, r: Raw, endpoint: string, code: RegExp): Promise<void> {
  const row = await rowOf(gw, String(r.headers['x-request-id']));
  t.match(row, { endpoint, provider: 'oai', model: MODEL, requested_model: MODEL, status: 'failure', http_status: 200, error_type: code, usage_source: 'estimated' }, 'a failure row (the 200 had been sent)');
  t.equal(Boolean(row.stream), true, 'streamed');
  t.same(bucketsOf(row), ESTIMATED, 'input estimated from the request, output from the two streamed words, no cache buckets');
  t.equal(Number(row.cost), ESTIMATED_COST, 'the estimate priced as reported usage would be');
}

/** The content of a Chat stream's chunks (all but the error frame). */
const chatContent = (fs: string[]) =>
  fs.map((f) => ((dataOf(f) as { choices?: { delta?: { content?: string | null } }[] }).choices?.[0]?.delta?.content ?? '')).join('');

for (const br of BREAKS) {
  t.test(br.label, async (t) => {
    await t.test('openai responses, raw: the deltas, response.failed, then exactly one data: [DONE]', async (t) => {
      up.next({ kind: br.kind, chunks: CHUNKS });
      const r = await raw('/v1/responses', { model: MODEL, input: 'hi', stream: true }, { authorization: 'Bearer client' });
      t.equal(r.status, 200, 'the stream had started');
      checkTiming(t, br, r);
      const f = frames(r.text);
      t.equal(f.at(-1), 'data: [DONE]', 'the last frame is data: [DONE]');
      t.equal(r.text.match(/^data: \[DONE\]$/gm)?.length, 1, 'exactly one data: [DONE]');
      t.ok(r.text.endsWith('data: [DONE]\n\n'), 'nothing after [DONE]');
      t.match(f.at(-2), /^event: response\.failed\n/, 'response.failed right before [DONE]');
      t.equal(f.filter((x) => x.startsWith('event: response.failed')).length, 1, 'one response.failed');
      const failed = dataOf(f.at(-2)!) as { type: string; response: { status: string; error: { code: string; message: string } } };
      t.equal(failed.type, 'response.failed');
      t.equal(failed.response.status, 'failed');
      t.match(failed.response.error, { code: br.code, message: String }, 'the gateway error code');
      t.notMatch(r.text, /response\.completed/, 'no response.completed');
      const deltas = f.filter((x) => x.startsWith('event: response.output_text.delta\n')).map((x) => (dataOf(x) as { delta: string }).delta);
      t.same(deltas, SENT, 'the two deltas streamed before the failure reached the client');
      await checkRow(t, r, 'responses', br.code);
    });

    await t.test('anthropic, raw: the deltas, then event: error, no message_stop', async (t) => {
      up.next({ kind: br.kind, chunks: CHUNKS });
      const r = await raw('/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true }, { 'x-api-key': 'client' });
      t.equal(r.status, 200, 'the stream had started');
      checkTiming(t, br, r);
      const f = frames(r.text);
      t.match(f.at(-1), /^event: error\ndata: /, 'the last event is event: error');
      t.equal(f.filter((x) => x.startsWith('event: error')).length, 1, 'one error event');
      const err = dataOf(f.at(-1)!) as { type: string; error: { type: string; message: string } };
      t.match(err, { type: 'error', error: { type: String, message: String } }, 'Anthropic error shape');
      if (br.kind === 'stall') t.equal(err.error.type, 'timeout_error', 'a stall is a timeout_error');
      t.notMatch(r.text, /event: message_stop/, 'no message_stop');
      t.notMatch(r.text, /event: message_delta/, 'no message_delta');
      const deltas = f
        .filter((x) => x.startsWith('event: content_block_delta\n'))
        .map((x) => (dataOf(x) as { delta: { type: string; text?: string } }).delta)
        .flatMap((d) => (d.type === 'text_delta' ? [d.text ?? ''] : []));
      t.same(deltas, SENT, 'the two deltas streamed before the failure reached the client');
      await checkRow(t, r, 'messages', br.code);
    });

    for (const path of ['fast', 'translated'] as const) {
      await t.test(`openai chat, ${path} path, raw: the chunks, then the error event, no [DONE]`, async (t) => {
        up.next({ kind: br.kind, chunks: CHUNKS });
        // `(auto)` forces the translated path and, for the openai thinking family, sends nothing (docs/thinking.md).
        const model = path === 'fast' ? MODEL : `${MODEL}(auto)`;
        const r = await raw('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }, { authorization: 'Bearer client' });
        t.equal(r.status, 200, 'the stream had started');
        checkTiming(t, br, r);
        t.notMatch(r.text, /\[DONE\]/, 'no [DONE] after a failure');
        const f = frames(r.text);
        t.ok(f.every((x) => x.startsWith('data: ')), 'only data frames');
        const last = dataOf(f.at(-1)!) as { error?: { code: string; message: string; type: string } };
        t.match(last.error, { code: br.code, message: String, type: 'upstream_error' }, 'the last event is the error event');
        t.equal(chatContent(f.slice(0, -1)), SENT.join(''), 'the two chunks of text came first');
        if (path === 'fast') t.match(r.text, /"system_fingerprint":"fp_fake"/, "fast path: the upstream's chunks as they came");
        else t.notMatch(r.text, /fp_fake/, 'translated path: chunks rendered by the gateway');
        await checkRow(t, r, 'chat.completions', br.code);
      });
    }

    await t.test('gemini, raw: the chunks, then a bare Gemini error body', async (t) => {
      up.next({ kind: br.kind, chunks: CHUNKS });
      const r = await raw(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'client' });
      t.equal(r.status, 200, 'the stream had started');
      checkTiming(t, br, r);
      const lines = r.text.split('\n').filter((l) => l.trim() !== '');
      const last = JSON.parse(lines.at(-1)!) as { error?: { code: number; status: string; message: string } };
      t.match(last.error, { code: br.kind === 'stall' ? 504 : 502, status: br.kind === 'stall' ? 'DEADLINE_EXCEEDED' : 'UNAVAILABLE', message: String }, 'ends with a Gemini error body');
      const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.replace(/^data: /, '')) as { candidates?: { content?: { parts?: { text?: string }[] }; finishReason?: string }[] });
      t.equal(chunks.map((c) => (c.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('')).join(''), SENT.join(''), 'the text before the failure');
      t.notOk(chunks.some((c) => c.candidates?.[0]?.finishReason), 'no finishReason: the answer did not finish');
      await checkRow(t, r, 'generate_content', br.code);
    });

    await t.test('the SDKs: Responses ends on response.failed, Anthropic, Chat and Gemini raise', async (t) => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      up.next({ kind: br.kind, chunks: CHUNKS });
      const types: string[] = [];
      let respText = '';
      for await (const e of await openai.responses.create({ model: MODEL, input: 'hi', stream: true })) {
        types.push(e.type);
        if (e.type === 'response.output_text.delta') respText += e.delta;
      }
      t.equal(types.at(-1), 'response.failed', 'openai SDK Responses: the last event is response.failed; [DONE] ends the iteration');
      t.notOk(types.includes('response.completed'));
      t.equal(respText, SENT.join(''));

      up.next({ kind: br.kind, chunks: CHUNKS });
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
      const s = anthropic.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
      let anthText = '';
      s.on('text', (d) => (anthText += d));
      const anthErr = await s.finalMessage().then(() => null, (e: unknown) => e);
      t.ok(anthErr instanceof Anthropic.APIError, 'Anthropic SDK: the stream rejects with an APIError');
      t.match((anthErr as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: br.kind === 'stall' ? 'timeout_error' : String } }, 'Anthropic SDK: the error event body');
      t.equal(anthText, SENT.join(''), 'Anthropic SDK: the text before the failure');

      for (const model of [MODEL, `${MODEL}(auto)`]) {
        up.next({ kind: br.kind, chunks: CHUNKS });
        let chatText = '';
        const chatErr = await (async () => {
          for await (const c of await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], stream: true })) chatText += c.choices[0]?.delta.content ?? '';
        })().then(() => null, (e: unknown) => e);
        t.ok(chatErr instanceof OpenAI.APIError, `openai SDK Chat (${model}): APIError from the error event`);
        t.match((chatErr as InstanceType<typeof OpenAI.APIError>).error, { code: br.code });
        t.equal(chatText, SENT.join(''));
      }

      up.next({ kind: br.kind, chunks: CHUNKS });
      const genai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });
      let gemText = '';
      const gemErr = await (async () => {
        for await (const c of await genai.models.generateContentStream({ model: MODEL, contents: 'hi' })) gemText += c.text ?? '';
      })().then(() => null, (e: unknown) => e);
      t.ok(gemErr instanceof ApiError, `Gemini SDK: ApiError (${String(gemErr)})`);
      t.equal((gemErr as ApiError).status, br.kind === 'stall' ? 504 : 502);
      t.equal(gemText, SENT.join(''), 'Gemini SDK: the text before the failure');
    });
  });
}

// ------------------------------------------------------------------------------------------------ 429

const RETRY_AFTER = '7';
const RATE_BODY = { error: { message: 'Rate limit reached for o3 in organization org-fake on tokens per min (TPM).', type: 'tokens', param: null, code: 'rate_limit_exceeded' } };
const rateLimited = (): Behaviour => ({ kind: 'error', status: 429, body: RATE_BODY, headers: { 'retry-after': RETRY_AFTER } });

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
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    for (const model of [MODEL, `${MODEL}(auto)`]) {
      await t.test(`openai chat SDK (${model})`, async (t) => {
        up.next(rateLimited());
        const err = await (stream
          ? (async () => {
              for await (const c of await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], stream: true })) void c;
            })()
          : openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
        ).then(() => null, (e: unknown) => e);
        t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
        const e = err as InstanceType<typeof OpenAI.APIError>;
        t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
        t.match(e.error, RATE_BODY.error, "the upstream's error body, passed through");
        await check429Row(t, e.headers?.get('x-request-id'), 'chat.completions', stream);
      });
    }

    await t.test('openai responses SDK', async (t) => {
      up.next(rateLimited());
      const err = await (stream
        ? (async () => {
            for await (const e of await openai.responses.create({ model: MODEL, input: 'hi', stream: true })) void e;
          })()
        : openai.responses.create({ model: MODEL, input: 'hi' })
      ).then(() => null, (e: unknown) => e);
      t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof OpenAI.APIError>;
      t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
      await check429Row(t, e.headers?.get('x-request-id'), 'responses', stream);
    });

    await t.test('anthropic SDK', async (t) => {
      up.next(rateLimited());
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
      const body = { model: MODEL, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
      const err = await (stream ? anthropic.messages.stream(body).finalMessage() : anthropic.messages.create(body)).then(() => null, (e: unknown) => e);
      t.ok(err instanceof Anthropic.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof Anthropic.APIError>;
      t.equal(e.headers?.get('retry-after'), RETRY_AFTER, 'retry-after');
      await check429Row(t, e.headers?.get('x-request-id'), 'messages', stream);
    });

    await t.test('gemini SDK (@google/genai)', async (t) => {
      up.next(rateLimited());
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
      t.equal(last?.headers.get('retry-after'), RETRY_AFTER, 'retry-after');
      await check429Row(t, last?.headers.get('x-request-id'), 'generate_content', stream);
    });
  });
}

t.test('after the failures the next request is answered normally (nothing left queued)', async (t) => {
  const r = await raw('/v1/responses', { model: MODEL, input: 'hi' }, { authorization: 'Bearer client' });
  t.equal(r.status, 200);
  t.match(JSON.parse(r.text), { status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: DEFAULT_WORDS.join('') }] }] });
});
