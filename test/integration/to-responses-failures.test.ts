// Failure paths of an OpenAI Responses upstream (test/helpers/fake-responses.ts, provider `resp`, stall_s 1), for
// clients of every format:
// - the upstream stalls, or cuts the connection, before response.completed: a Responses client gets
//   `response.failed` followed by exactly one `data: [DONE]` (checked on the raw bytes: no non-JSON line, no
//   duplicate [DONE], sequence numbers in order), an Anthropic client gets `event: error`, a Chat client an error
//   event and a Gemini client an error the SDK raises; the row is a failure with its usage estimated from the
//   request and the streamed deltas;
// - an upstream 429 with retry-after: the status and the header reach every client, whole and streamed;
// - the fake itself, read by the official openai SDK directly, is a faithful Responses API (auth, validation, SSE).

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { request } from 'undici';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { startApp } from '../helpers/app.js';
import { DEFAULT_TEXT, DEFAULT_WORDS, openaiError, respProvider, startFakeResponses, TEXT_STREAM_EVENTS, UPSTREAM_KEY } from '../helpers/fake-responses.js';
import { buckets, type Row, withRow } from '../helpers/clients.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeResponses(t);
const gw = await startApp(t, {
  providers: {
    resp: respProvider(up.baseUrl),
    badkey: respProvider(up.baseUrl, { auth: { type: 'api_key', key: 'sk-not-the-right-key-0000' } }),
  },
});
const MODEL = 'resp/o4-mini';
// No usage was reported (Responses sends it in response.completed), so the row estimates it (src/wire/estimate.ts,
// o4-mini: o200k_base): every client sends one user message 'hi' (input 3 + 'user' + 'hi' + 3 priming); the output
// is the text of the two streamed deltas. Price of `resp`: input 2, output 8 USD per 1M tokens.
const SENT_WORDS = DEFAULT_WORDS.slice(0, 2).join('');
const INPUT = 3 + countTokens('user') + countTokens('hi') + 3;
const OUTPUT = countTokens(SENT_WORDS);
const ESTIMATED_COST = (INPUT * 2 + OUTPUT * 8) / 1e6;

/** Raw POST to the gateway; the whole body as text. */
async function raw(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

interface Frame {
  event: string | null;
  data: string;
  lines: string[];
}

/**
 * Split an SSE body into frames (blank-line separated); each frame keeps its raw lines. Comment blocks (the
 * upstream's keep-alive, forwarded as it came) are left out: `comments` counts them.
 */
function frames(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((f) => f !== '' && !f.split('\n').every((l) => l.startsWith(':')))
    .map((f) => {
      const lines = f.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null;
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return { event, data, lines };
    });
}

/** The comment lines of an SSE body. */
const comments = (text: string): string[] => text.split('\n').filter((l) => l.startsWith(':'));

const isJson = (s: string): boolean => {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
};

type Cause = 'stall' | 'cut' | 'end';
const CAUSES: Record<Cause, string> = {
  stall: 'the upstream stalls',
  cut: 'the upstream drops the connection',
  end: 'the upstream ends the response',
};
const STALL_EVENTS = 6; // created, in_progress, output_item.added, content_part.added, delta "Hello", delta " from"
const SENT_TEXT = DEFAULT_WORDS.slice(0, 2).join('');

/**
 * The failure, with a proxy's keep-alive comment and a stray `data: [DONE]` from upstream that must not reach clients
 * of another format. A Responses client is passed through (its bytes as the upstream sent them): `junk: false`.
 */
function nextFailure(cause: Cause, { junk = true } = {}): void {
  up.next(cause === 'stall' ? { kind: 'stall', events: STALL_EVENTS, junk } : { kind: 'cut', events: STALL_EVENTS, clean: cause === 'end', junk });
}

function checkFailureRow(t: Test, row: Row, endpoint: string, cause: Cause): void {
  t.match(row, { endpoint, provider: 'resp', model: MODEL, stream: true, status: 'failure', http_status: 200 }, 'row: failure of a stream that had started');
  const expected = { stall: 'TOLLGATE_ERR_UPSTREAM_STALL', cut: 'TOLLGATE_ERR_UPSTREAM_CONNECT', end: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }[cause];
  t.equal(row.error_type, expected, `error type: ${expected}`);
  t.equal(row.usage_source, 'estimated', 'no usage reported: estimated');
  t.same(buckets(row), [INPUT, null, null, OUTPUT, null], 'input estimated from the request, output from the two streamed deltas');
  t.equal(Number(row.cost), ESTIMATED_COST, 'the estimate priced as reported usage would be');
}

for (const cause of ['stall', 'cut', 'end'] as const) {
  t.test(`${CAUSES[cause]} before response.completed`, async (t) => {
    const abandonedBefore = up.aborted;
    t.test('Responses client: response.failed then exactly one data: [DONE] (raw bytes)', async (t) => {
      nextFailure(cause, { junk: false });
      const { value: res, row } = await withRow(gw, t, () => raw('/v1/responses', { model: MODEL, input: 'hi', stream: true }));
      t.equal(res.status, 200);
      t.match(String(res.headers['content-type']), /^text\/event-stream/);
      checkRequestId(t, String(res.headers['x-request-id']), row);
      t.ok(res.text.endsWith('data: [DONE]\n\n'), 'the body ends with data: [DONE]');
      const fs = frames(res.text);
      const done = fs.filter((f) => f.data === '[DONE]');
      t.equal(done.length, 1, 'exactly one [DONE]');
      t.equal(fs.at(-1)!.data, '[DONE]', '[DONE] is the last frame');
      t.equal(fs.at(-1)!.lines.length, 1, '[DONE] frame is a bare data line');
      const events = fs.slice(0, -1);
      for (const f of events) {
        t.ok(f.lines.every((l) => l.startsWith('event: ') || l.startsWith('data: ')), `only event/data lines: ${f.lines[0]}`);
        t.ok(isJson(f.data), `JSON data: ${f.data.slice(0, 60)}`);
      }
      const payloads = events.map((f) => JSON.parse(f.data) as { type: string; sequence_number: number; delta?: string; response?: Record<string, unknown> });
      t.same(payloads.map((p) => p.type), events.map((f) => f.event), 'each event name matches its payload type');
      t.same(payloads.map((p) => p.sequence_number), payloads.map((_, i) => i), 'sequence numbers 0, 1, 2, ...');
      t.equal(payloads[0]!.type, 'response.created');
      t.equal(payloads.filter((p) => p.type.startsWith('response.') && ['response.completed', 'response.failed', 'response.incomplete'].includes(p.type)).length, 1, 'one terminal event');
      const last = payloads.at(-1)!;
      t.equal(last.type, 'response.failed', 'response.failed right before [DONE]');
      t.match(last.response, { object: 'response', status: 'failed', error: { code: String(row.error_type) } }, 'failed response names the error');
      t.equal(payloads.filter((p) => p.type === 'response.output_text.delta').map((p) => p.delta).join(''), SENT_TEXT, 'the deltas sent before the failure reached the client');
      t.notOk(payloads.some((p) => p.type === 'response.completed'), 'no response.completed');
      checkFailureRow(t, row, 'responses', cause);
    });

    t.test('Responses client (openai SDK): the stream ends on response.failed without a parse error', async (t) => {
      nextFailure(cause, { junk: false });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const types: string[] = [];
      const { row } = await withRow(gw, t, async () => {
        for await (const e of await client.responses.create({ model: MODEL, input: 'hi', stream: true })) types.push(e.type);
      });
      t.equal(types.at(-1), 'response.failed');
      t.equal(types.filter((x) => x === 'response.failed').length, 1);
      checkFailureRow(t, row, 'responses', cause);
    });

    t.test('Anthropic client: event: error (raw bytes), and the SDK raises it', async (t) => {
      nextFailure(cause);
      const body = { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true };
      const { value: res, row } = await withRow(gw, t, () => raw('/v1/messages', body, { 'anthropic-version': '2023-06-01' }));
      t.equal(res.status, 200);
      const fs = frames(res.text);
      t.same(comments(res.text), [': keep-alive'], 'the upstream\'s keep-alive reached the client as a comment');
      for (const f of fs) {
        t.ok(f.event !== null && f.lines.length === 2, `event + data frame: ${f.lines[0]}`);
        t.ok(isJson(f.data), `JSON data: ${f.data.slice(0, 60)}`);
      }
      t.notOk(res.text.includes('[DONE]'), 'no [DONE] for Anthropic');
      t.equal(fs.filter((f) => f.event === 'error').length, 1, 'one error event');
      const last = fs.at(-1)!;
      t.equal(last.event, 'error', 'the stream ends with event: error');
      t.match(JSON.parse(last.data), { type: 'error', error: { type: String, message: String } });
      t.notOk(fs.some((f) => f.event === 'message_stop'), 'no message_stop');
      const text = fs.filter((f) => f.event === 'content_block_delta').map((f) => (JSON.parse(f.data) as { delta: { text?: string } }).delta.text ?? '').join('');
      t.equal(text, SENT_TEXT, 'the deltas sent before the failure reached the client');
      checkFailureRow(t, row, 'messages', cause);

      nextFailure(cause);
      const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
      const err = await client.messages
        .stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage()
        .catch((e: unknown) => e);
      t.ok(err instanceof Anthropic.APIError, `the SDK raises the error event: ${String(err)}`);
    });

    t.test('Chat client: an error event, no [DONE] after it', async (t) => {
      nextFailure(cause);
      const { value: res, row } = await withRow(gw, t, () => raw('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }));
      const fs = frames(res.text);
      t.same(comments(res.text), [': keep-alive'], 'the upstream\'s keep-alive reached the client as a comment');
      for (const f of fs) t.ok(isJson(f.data) && f.lines.length === 1, `one JSON data line: ${f.lines[0]?.slice(0, 60)}`);
      t.notOk(res.text.includes('[DONE]'), 'no [DONE] after an error');
      t.match(JSON.parse(fs.at(-1)!.data), { error: { code: String(row.error_type), message: String } }, 'ends with the error event');
      checkFailureRow(t, row, 'chat.completions', cause);

      nextFailure(cause);
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      let text = '';
      const err = await (async () => {
        for await (const c of await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })) text += c.choices[0]?.delta.content ?? '';
      })().catch((e: unknown) => e);
      t.ok(err instanceof OpenAI.APIError, `the SDK raises the error event: ${String(err)}`);
      t.equal(text, SENT_TEXT);
    });

    t.test('Gemini client: the SDK raises an error', async (t) => {
      nextFailure(cause);
      const genai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: gw.url } });
      let text = '';
      const { value: err, row } = await withRow(gw, t, async () =>
        (async () => {
          for await (const c of await genai.models.generateContentStream({ model: MODEL, contents: 'hi' })) text += c.text ?? '';
        })().catch((e: unknown) => e),
      );
      t.ok(err instanceof Error, `the SDK raises: ${String(err)}`);
      t.equal(text, SENT_TEXT, 'the text sent before the failure reached the client');
      checkFailureRow(t, row, 'generate_content', cause);
    });

    // Seven streams above failed. A stalled upstream never ends its response: each one it saw closed was closed by
    // the gateway (after stall_s).
    if (cause === 'stall') {
      t.test('the gateway hung up on every stalled upstream response', async (t) => {
        await waitFor(() => up.aborted - abandonedBefore >= 7);
        t.equal(up.aborted - abandonedBefore, 7);
      });
    }
  });
}

// ---- 429 ---------------------------------------------------------------------------------------------------------

const RATE_LIMIT = openaiError('Rate limit reached for o4-mini in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.', 'requests', null, 'rate_limit_exceeded');
const next429 = () => up.next({ kind: 'error', status: 429, body: RATE_LIMIT, headers: { 'retry-after': '20', 'x-ratelimit-remaining-requests': '0' } });

function check429Row(t: Test, row: Row, endpoint: string, stream: boolean): void {
  t.match(row, { endpoint, provider: 'resp', model: MODEL, stream, status: 'failure', http_status: 429, error_type: '429', usage_source: 'none' }, 'row: failure, 429');
  t.same(buckets(row), [null, null, null, null, null], 'no usage: null, not zero');
  t.equal(Number(row.cost), 0);
}

/**
 * docs/api.md, errors.md, recording.md: `x-request-id` is the UUIDv7 of the request's usage row; of an upstream error
 * only status, body, content-type and retry-after / retry-after-ms are passed on. OpenAI sends its own
 * `x-request-id: req_...` on every response, errors included.
 */
function checkRequestId(t: Test, header: string | null | undefined, row: Row): void {
  t.equal(header, row.request_id, "x-request-id is the gateway's request id (the row's), not the upstream's");
}

for (const stream of [false, true]) {
  const mode = stream ? 'streamed' : 'whole';
  t.test(`${mode}: upstream 429 with retry-after reaches every client`, async (t) => {
    t.test('OpenAI Chat', async (t) => {
      next429();
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const { value: err, row } = await withRow(gw, t, () =>
        (stream ? client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }) : client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e),
      );
      t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof OpenAI.RateLimitError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), '20', 'retry-after forwarded');
      t.equal(e.code, 'rate_limit_exceeded', 'upstream error body passed through');
      check429Row(t, row, 'chat.completions', stream);
      checkRequestId(t, e.headers?.get('x-request-id'), row);
    });

    t.test('OpenAI Responses', async (t) => {
      next429();
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const { value: err, row } = await withRow(gw, t, () =>
        (stream ? client.responses.create({ model: MODEL, input: 'hi', stream: true }) : client.responses.create({ model: MODEL, input: 'hi' })).catch((e: unknown) => e),
      );
      t.ok(err instanceof OpenAI.RateLimitError, 'RateLimitError');
      const e = err as InstanceType<typeof OpenAI.RateLimitError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), '20', 'retry-after forwarded');
      check429Row(t, row, 'responses', stream);
      checkRequestId(t, e.headers?.get('x-request-id'), row);
    });

    t.test('Anthropic', async (t) => {
      next429();
      const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
      const params = { model: MODEL, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
      const { value: err, row } = await withRow(gw, t, () =>
        (stream ? client.messages.stream(params).finalMessage() : client.messages.create(params)).catch((e: unknown) => e),
      );
      t.ok(err instanceof Anthropic.RateLimitError, `RateLimitError: ${String(err)}`);
      const e = err as InstanceType<typeof Anthropic.RateLimitError>;
      t.equal(e.status, 429);
      t.equal(e.headers?.get('retry-after'), '20', 'retry-after forwarded');
      check429Row(t, row, 'messages', stream);
      checkRequestId(t, e.headers?.get('x-request-id'), row);
    });

    t.test('Gemini', async (t) => {
      next429();
      let seen: Headers | undefined;
      const genai = new GoogleGenAI({
        apiKey: 'unused',
        httpOptions: {
          baseUrl: gw.url,
          fetch: async (input: string | URL | Request, init?: RequestInit) => {
            const r = await fetch(input, init);
            seen = r.headers;
            return r;
          },
        },
      });
      const { value: err, row } = await withRow(gw, t, () =>
        (stream ? genai.models.generateContentStream({ model: MODEL, contents: 'hi' }) : genai.models.generateContent({ model: MODEL, contents: 'hi' })).catch((e: unknown) => e),
      );
      t.ok(err instanceof ApiError, `ApiError: ${String(err)}`);
      t.equal((err as ApiError).status, 429);
      t.equal(seen?.get('retry-after'), '20', 'retry-after forwarded');
      check429Row(t, row, 'generate_content', stream);
      checkRequestId(t, seen?.get('x-request-id'), row);
    });
  });
}

t.test('a provider configured with the wrong key: the upstream 401 reaches the client', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const err = await client.responses.create({ model: 'badkey/o4-mini', input: 'hi' }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.AuthenticationError, 'AuthenticationError');
  t.equal((err as InstanceType<typeof OpenAI.AuthenticationError>).code, 'invalid_api_key');
  t.equal(up.received.at(-1)!.headers.authorization, 'Bearer sk-not-the-right-key-0000');
  const [row] = await gw.rows(`provider = 'badkey'`);
  t.match(row, { status: 'failure', http_status: 401, error_type: '401' });
});

// ---- the fake itself -------------------------------------------------------------------------------------------

t.test('the fake speaks the Responses API as the official openai SDK reads it', async (t) => {
  const direct = new OpenAI({ baseURL: up.baseUrl, apiKey: UPSTREAM_KEY, maxRetries: 0 });

  const noKey = await new OpenAI({ baseURL: up.baseUrl, apiKey: 'sk-wrong-key-1234', maxRetries: 0 }).responses.create({ model: 'o4-mini', input: 'hi' }).catch((e: unknown) => e);
  t.ok(noKey instanceof OpenAI.AuthenticationError, 'a wrong key gets 401');
  t.match((noKey as InstanceType<typeof OpenAI.AuthenticationError>).message, /Incorrect API key provided: sk-\*+1234/);

  const whole = await direct.responses.create({ model: 'o4-mini', input: 'hi', store: false });
  t.equal(whole.output_text, DEFAULT_TEXT);
  t.match(whole, { object: 'response', status: 'completed', model: 'o4-mini', usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 16 }, output_tokens: 25, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 65 } });
  t.match(whole.id, /^resp_/);

  // responses.stream() rebuilds the response from the events and fails on any inconsistency between them.
  up.next({ kind: 'reasoning' }, { kind: 'tool' });
  const s = direct.responses.stream({ model: 'o4-mini', input: 'hi', include: ['reasoning.encrypted_content'], store: false });
  let n = 0;
  s.on('event', () => n++);
  const fin = await s.finalResponse();
  t.equal(n, TEXT_STREAM_EVENTS + 8, 'the text stream plus eight reasoning events');
  t.same(fin.output.map((i) => i.type), ['reasoning', 'message']);
  t.match(fin.output[0], { type: 'reasoning', encrypted_content: /^gAAAA/ });
  t.equal(fin.output_text, DEFAULT_TEXT);
  const call = await direct.responses.stream({ model: 'gpt-4.1', input: 'weather?', tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false }] }).finalResponse();
  t.match(call.output, [{ type: 'function_call', name: 'get_weather', call_id: /^call_/, arguments: '{"city":"Paris","unit":"celsius"}' }]);

  const rejected = [
    [{ model: 'gpt-4.1', input: 'hi', reasoning: { effort: 'high' } }, 'reasoning.effort'],
    [{ model: 'o4-mini', input: 'hi', temperature: 0.2 }, 'temperature'],
    [{ model: 'gpt-4.1', input: 'hi', include: ['reasoning.encrypted_content'] }, 'include'],
    [{ model: 'o4-mini', input: 'hi', max_tokens: 100 }, 'max_tokens'],
    [{ model: 'o4-mini', input: 'hi', max_output_tokens: 8 }, 'max_output_tokens'],
    [{ model: 'o4-mini', input: 'hi', tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools[0].name'],
    [{ model: 'o4-mini', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }] }, null],
  ] as const;
  for (const [body, param] of rejected) {
    const e = await direct.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming).catch((x: unknown) => x);
    t.ok(e instanceof OpenAI.BadRequestError, `400 for ${JSON.stringify(body).slice(0, 80)}`);
    t.equal((e as InstanceType<typeof OpenAI.BadRequestError>).param ?? null, param);
  }
});
