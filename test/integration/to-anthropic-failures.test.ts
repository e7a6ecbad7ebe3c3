// Failure paths against a fake Anthropic Messages upstream (test/helpers/fake-anthropic.ts): the upstream stalls
// mid-stream (timeouts.stall_s 1), closes the stream early (cleanly or by dropping the socket), or reports an error
// event; each client gets its format's terminal error (Responses: `response.failed` then exactly one
// `data: [DONE]`; Anthropic: `event: error`; Chat: the error event without [DONE]; Gemini: an error the SDK
// raises) and the row is a failure. An upstream 429 reaches every client with its status and retry-after.
// The raw SSE is read with undici `request` so the bytes themselves are checked.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { DEFAULT_TEXT, FAKE_ANTHROPIC_KEY, fakeAnthropicProvider, startFakeAnthropic, type AnthropicBehaviour } from '../helpers/fake-anthropic.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeAnthropic(t);
const gw = await startApp(t, { providers: { anth: fakeAnthropicProvider(up.url) } });

const MODEL = 'anth/claude-sonnet-4-5';
const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });

// With the default text answer the fake writes: 1 message_start, 2 content_block_start, 3 ping, 4 the first text
// delta ('Hello'), ...; so after 4 events the client has seen 'Hello' and the usage of message_start.
const AFTER_FIRST_DELTA = 4;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
}

async function raw(path: string, body: unknown): Promise<Raw> {
  const started = Date.now();
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, ms: Date.now() - started };
}

const frames = (text: string) => text.split('\n\n').filter((f) => f.trim() !== '');
const dataOf = (frame: string): Record<string, unknown> => JSON.parse(frame.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>;

/** The newest row for an endpoint and stream flag, waiting for it to land after `before` rows. */
async function rowAfter(t: Test, where: string, before: number): Promise<Record<string, unknown>> {
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows(where)).length > before);
  t.equal(rows.length, before + 1, 'exactly one new row');
  return rows.at(-1)!;
}
const countRows = async (where: string) => (await gw.rows(where)).length;

interface Case {
  readonly label: string;
  readonly behaviour: AnthropicBehaviour;
  /** Acceptable row error_type values. */
  readonly codes: readonly string[];
  /** The stall timeout must have passed. */
  readonly slow: boolean;
}

const CASES: Case[] = [
  { label: 'the upstream stalls after the first delta', behaviour: { kind: 'stall', events: AFTER_FIRST_DELTA }, codes: ['TOLLGATE_ERR_UPSTREAM_STALL'], slow: true },
  { label: 'the upstream ends the response before message_stop', behaviour: { kind: 'cut', events: AFTER_FIRST_DELTA, clean: true }, codes: ['TOLLGATE_ERR_UPSTREAM_PROTOCOL'], slow: false },
  // A dropped socket mid chunked body surfaces as a socket error in undici: connect or protocol are both fair names.
  { label: 'the upstream drops the connection mid-stream', behaviour: { kind: 'cut', events: AFTER_FIRST_DELTA }, codes: ['TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'TOLLGATE_ERR_UPSTREAM_CONNECT'], slow: false },
  { label: 'the upstream sends event: error (overloaded) mid-stream', behaviour: { kind: 'stream_error', events: AFTER_FIRST_DELTA }, codes: ['upstream_stream_error'], slow: false },
];

function checkFailureRow(t: Test, row: Record<string, unknown>, c: Case) {
  t.match(row, { status: 'failure', stream: true, http_status: 200, provider: 'anth', model: MODEL }, 'row: streamed failure (the 200 had been sent)');
  t.ok(c.codes.includes(String(row.error_type)), `error_type ${String(row.error_type)} is one of ${c.codes.join(', ')}`);
  // message_start reported the input side before the failure; those are the upstream's numbers.
  t.same([row.input_tokens, row.cached_tokens, row.cache_write_tokens].map((v) => (v === null ? null : Number(v))), [20, 5, 7], 'input-side buckets from message_start');
  // Output is not asserted: message_start's output_tokens is a placeholder and message_delta never came.
  t.comment(`output_tokens=${String(row.output_tokens)} reasoning_tokens=${String(row.reasoning_tokens)} usage_source=${String(row.usage_source)} cost=${String(row.cost)}`);
}

t.test('the fake refuses requests without Anthropic headers, in Anthropic error shape', async (t) => {
  const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  const post = async (headers: Record<string, string>) => {
    const res = await request(`${up.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: res.statusCode, body: (await res.body.json()) as { type: string; error: { type: string; message: string } } };
  };
  const noKey = await post({ 'anthropic-version': '2023-06-01' });
  t.equal(noKey.status, 401);
  t.match(noKey.body, { type: 'error', error: { type: 'authentication_error', message: String } });
  const wrongKey = await post({ 'anthropic-version': '2023-06-01', 'x-api-key': 'nope' });
  t.equal(wrongKey.status, 401);
  t.equal(wrongKey.body.error.type, 'authentication_error');
  const noVersion = await post({ 'x-api-key': FAKE_ANTHROPIC_KEY });
  t.equal(noVersion.status, 400);
  t.equal(noVersion.body.error.type, 'invalid_request_error');
  const ok = await post({ 'x-api-key': FAKE_ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' });
  t.equal(ok.status, 200);
  t.match(ok.body, { type: 'message', role: 'assistant', stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 7, output_tokens: 9 } });
});

for (const c of CASES) {
  t.test(`Responses client, streamed: ${c.label}`, async (t) => {
    const where = `endpoint = 'responses' AND stream = true`;
    const before = await countRows(where);
    up.next(c.behaviour);
    const r = await raw('/v1/responses', { model: MODEL, input: 'hi', stream: true });
    t.equal(r.status, 200, 'the stream had started');
    if (c.slow) t.ok(r.ms >= 900 && r.ms < 5000, `ended by the 1 s stall timeout (${r.ms} ms)`);
    const f = frames(r.text);
    t.equal(f.at(-1), 'data: [DONE]', 'the last frame is data: [DONE]');
    t.equal(r.text.match(/^data: \[DONE\]$/gm)?.length, 1, 'exactly one data: [DONE]');
    t.ok(r.text.endsWith('data: [DONE]\n\n'), 'nothing after [DONE]');
    const failed = f.at(-2)!;
    t.match(failed, /^event: response\.failed\n/, 'response.failed right before [DONE]');
    const data = dataOf(failed) as { type: string; response: { status: string; error: { code: string; message: string } } };
    t.equal(data.type, 'response.failed');
    t.equal(data.response.status, 'failed');
    t.ok(c.codes.includes(data.response.error.code) || (c.codes[0] === 'upstream_stream_error' && data.response.error.code === 'overloaded_error'), `error code ${data.response.error.code}`);
    t.notMatch(r.text, /response\.completed/, 'no response.completed');
    t.equal(f.filter((x) => x.startsWith('event: response.failed')).length, 1, 'one response.failed');
    t.match(r.text, /"delta":"Hello"/, 'the text streamed before the failure reached the client');
    checkFailureRow(t, await rowAfter(t, where, before), c);
  });

  t.test(`Anthropic client, streamed: ${c.label}`, async (t) => {
    const where = `endpoint = 'messages' AND stream = true`;
    const before = await countRows(where);
    up.next(c.behaviour);
    const r = await raw('/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true });
    t.equal(r.status, 200);
    if (c.slow) t.ok(r.ms >= 900 && r.ms < 5000, `ended by the 1 s stall timeout (${r.ms} ms)`);
    const f = frames(r.text);
    t.match(f.at(-1), /^event: error\n/, 'the last event is event: error');
    const err = dataOf(f.at(-1)!) as { type: string; error: { type: string; message: string } };
    t.equal(err.type, 'error');
    t.match(err.error, { type: String, message: String }, 'Anthropic error shape');
    if (c.codes[0] === 'upstream_stream_error') t.equal(err.error.type, 'overloaded_error', "the upstream's error type");
    if (c.slow) t.equal(err.error.type, 'timeout_error', 'a stall is a timeout_error');
    t.notMatch(r.text, /event: message_stop/, 'no message_stop');
    t.notMatch(r.text, /event: message_delta/, 'no message_delta');
    t.equal(f.filter((x) => x.startsWith('event: error')).length, 1, 'one error event');
    t.match(r.text, /"text":"Hello"/, 'the text streamed before the failure reached the client');
    checkFailureRow(t, await rowAfter(t, where, before), c);
  });
}

t.test('the SDKs raise or report the failure (stall mid-stream)', async (t) => {
  up.next({ kind: 'stall', events: AFTER_FIRST_DELTA });
  const s = anthropic.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  s.on('text', (d) => (text += d));
  const anthErr = await s.finalMessage().then(() => null, (e: unknown) => e);
  t.ok(anthErr instanceof Anthropic.APIError, 'Anthropic SDK: the stream rejects with an APIError');
  t.match((anthErr as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'timeout_error' } }, 'Anthropic SDK: the error event body');
  t.equal(text, 'Hello', 'Anthropic SDK: the text before the stall');

  up.next({ kind: 'stall', events: AFTER_FIRST_DELTA });
  const types: string[] = [];
  for await (const e of await openai.responses.create({ model: MODEL, input: 'hi', stream: true })) types.push(e.type);
  t.equal(types.at(-1), 'response.failed', 'openai SDK Responses: the last event is response.failed, [DONE] ends the iteration');

  up.next({ kind: 'stall', events: AFTER_FIRST_DELTA });
  let chatText = '';
  const chatErr = await (async () => {
    for await (const c of await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })) chatText += c.choices[0]?.delta.content ?? '';
  })().then(() => null, (e: unknown) => e);
  t.ok(chatErr instanceof OpenAI.APIError, 'openai SDK Chat: APIError from the error event');
  t.match((chatErr as InstanceType<typeof OpenAI.APIError>).error, { code: 'TOLLGATE_ERR_UPSTREAM_STALL' });
  t.equal(chatText, 'Hello');

  up.next({ kind: 'stall', events: AFTER_FIRST_DELTA });
  const gemini = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });
  let gemText = '';
  await t.rejects(
    (async () => {
      for await (const c of await gemini.models.generateContentStream({ model: MODEL, contents: 'hi' })) gemText += c.text ?? '';
    })(),
    'Gemini SDK: the stream raises',
  );
  t.equal(gemText, 'Hello');
});

t.test('Chat client, streamed cut: the error event, no [DONE]', async (t) => {
  up.next({ kind: 'cut', events: AFTER_FIRST_DELTA, clean: true });
  const r = await raw('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true });
  const f = frames(r.text);
  t.match(dataOf(f.at(-1)!), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' } });
  t.notMatch(r.text, /\[DONE\]/);
});

t.test('non-streamed: a stall and a cut become gateway errors, recorded as failures', async (t) => {
  for (const [path, body, endpoint] of [
    ['/v1/responses', { model: MODEL, input: 'hi' }, 'responses'],
    ['/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }, 'messages'],
  ] as const) {
    const where = `endpoint = '${endpoint}' AND stream = false AND status = 'failure'`;
    let before = await countRows(where);
    up.next({ kind: 'stall', events: 0 });
    const stalled = await raw(path, body);
    t.equal(stalled.status, 504, `${endpoint}: stall -> 504`);
    t.match(stalled.text, /TOLLGATE_ERR_UPSTREAM_STALL/);
    t.match(await rowAfter(t, where, before), { error_type: 'TOLLGATE_ERR_UPSTREAM_STALL', http_status: 504 });

    before = await countRows(where);
    up.next({ kind: 'cut', events: 0 });
    const cut = await raw(path, body);
    t.equal(cut.status, 502, `${endpoint}: dropped connection -> 502`);
    t.match((await rowAfter(t, where, before)).error_type, /^TOLLGATE_ERR_UPSTREAM_(PROTOCOL|CONNECT)$/);
  }
});

// ------------------------------------------------------------------------------------------------- 429

const RATE_LIMITED: AnthropicBehaviour = { kind: 'error', status: 429, message: 'Number of request tokens has exceeded your per-minute rate limit', headers: { 'retry-after': '7' } };

t.test('an upstream 429 with retry-after reaches every client, streamed and not', async (t) => {
  const rowsBefore = await countRows(`status = 'failure' AND error_type = '429'`);
  let expected = 0;
  for (const stream of [false, true]) {
    const m = stream ? 'streamed' : 'non-streamed';

    up.next(RATE_LIMITED);
    const chatErr = await (stream
      ? (async () => {
          for await (const _ of await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })) void _;
        })()
      : openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
    ).catch((e: unknown) => e);
    t.ok(chatErr instanceof OpenAI.RateLimitError, `chat ${m}: RateLimitError`);
    t.equal((chatErr as InstanceType<typeof OpenAI.APIError>).status, 429);
    t.equal((chatErr as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'), '7', `chat ${m}: retry-after`);
    expected++;

    up.next(RATE_LIMITED);
    const respErr = await (stream
      ? (async () => {
          for await (const _ of await openai.responses.create({ model: MODEL, input: 'hi', stream: true })) void _;
        })()
      : openai.responses.create({ model: MODEL, input: 'hi' })
    ).catch((e: unknown) => e);
    t.ok(respErr instanceof OpenAI.RateLimitError, `responses ${m}: RateLimitError`);
    t.equal((respErr as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'), '7', `responses ${m}: retry-after`);
    expected++;

    up.next(RATE_LIMITED);
    const body = { model: MODEL, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
    const anthErr = await (stream ? anthropic.messages.stream(body).finalMessage() : anthropic.messages.create(body)).catch((e: unknown) => e);
    t.ok(anthErr instanceof Anthropic.RateLimitError, `anthropic ${m}: RateLimitError`);
    const ae = anthErr as InstanceType<typeof Anthropic.APIError>;
    t.equal(ae.status, 429);
    t.equal(ae.headers?.get('retry-after'), '7', `anthropic ${m}: retry-after`);
    t.match(ae.error, { type: 'error', error: { type: 'rate_limit_error' } }, `anthropic ${m}: the upstream's Anthropic error body`);
    expected++;

    up.next(RATE_LIMITED);
    let seen: Response | undefined;
    const gemini = new GoogleGenAI({
      apiKey: 'unused',
      httpOptions: {
        baseUrl: gw.url,
        fetch: async (input: Parameters<typeof fetch>[0], init?: RequestInit) => (seen = await fetch(input, init)),
      },
    });
    const gemErr = await (stream
      ? (async () => {
          for await (const _ of await gemini.models.generateContentStream({ model: MODEL, contents: 'hi' })) void _;
        })()
      : gemini.models.generateContent({ model: MODEL, contents: 'hi' })
    ).catch((e: unknown) => e);
    t.equal((gemErr as { status?: number }).status, 429, `gemini ${m}: ApiError status 429`);
    t.equal(seen?.status, 429);
    t.equal(seen?.headers.get('retry-after'), '7', `gemini ${m}: retry-after on the response the SDK read`);
    expected++;
  }
  const rows = await gw.rows(`status = 'failure' AND error_type = '429'`);
  t.equal(rows.length - rowsBefore, expected, 'one failure row per request');
  for (const row of rows.slice(rowsBefore)) t.match(row, { http_status: 429, provider: 'anth', input_tokens: null, output_tokens: null });
});

t.test('an upstream 529 overloaded without retry-after passes its status', async (t) => {
  up.next({ kind: 'error', status: 529, message: 'Overloaded' });
  const r = await raw('/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true });
  t.equal(r.status, 529);
  t.match(JSON.parse(r.text), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  t.notOk(r.headers['retry-after']);
});

t.test('after the failures the next request is answered normally (nothing left queued)', async (t) => {
  const r = await raw('/v1/messages', { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(r.status, 200);
  t.equal((JSON.parse(r.text) as { content: { text: string }[] }).content[0]?.text, DEFAULT_TEXT.join(''));
});
