// A stream request answered 200 with JSON is refused on every path, the same-format passthrough included: 502
// TOLLGATE_ERR_UPSTREAM_PROTOCOL in the error shape before any byte, recorded a failure with that type, the span
// saying so. Before, the passthrough relayed the JSON to a client whose SDK expected an event stream, recorded as a
// billed success (the fast path and the translated path already refused it). The one exception is a request that
// legitimately expects JSON: Gemini's streamGenerateContent without alt=sse answers one JSON array of chunks, served
// and recorded with its usage. A fallback combo (translated, attempt by attempt) moves on past such a member. The
// refused JSON answer is billed by the provider: its usage is the failed row's (before, $0 was recorded).

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeAnyFormat } from '../helpers/fake-any-format.js';

const up = await startFakeAnyFormat(t);
const gw = await startApp(t, {
  providers: {
    'oa-json': fakeProvider(up.port, 'json', 'openai'),
    'rs-json': fakeProvider(up.port, 'json', 'openai-responses'),
    'an-json': fakeProvider(up.port, 'json', 'anthropic'),
    'gm-json': fakeProvider(up.port, 'json', 'gemini'),
    'an-ok': fakeProvider(up.port, 'ok', 'anthropic'),
    // The combo's own (a provider refused above cools down, and a combo passes over a cooling member).
    'an-json-c': fakeProvider(up.port, 'json', 'anthropic'),
    'gm-ok': fakeProvider(up.port, 'ok', 'gemini'),
  },
  combos: { fb: { strategy: 'fallback', models: ['an-json-c/m', 'an-ok/m'] } },
});

interface Answer { status: number; type: string | null; text: string; id: string | null }

async function post(path: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text(), id: res.headers.get('x-request-id') };
}
const USER = [{ role: 'user', content: 'hello' }];
const chat = (model: string) => post('/v1/chat/completions', { model, stream: true, messages: USER });
const responses = (model: string) => post('/v1/responses', { model, stream: true, input: 'hello' });
const messages = (model: string) => post('/v1/messages', { model, stream: true, max_tokens: 10, messages: USER });
const gemini = (model: string, alt: string) =>
  post(`/v1beta/models/${model}:streamGenerateContent${alt === '' ? '' : `?alt=${alt}`}`, { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] });

async function rowOf(id: string | null): Promise<Record<string, unknown> | undefined> {
  await gw.flush();
  return (await gw.rows(`request_id = '${id}'`))[0];
}

const refusals: [string, () => Promise<Answer>, string][] = [
  ['OpenAI Chat (fast path)', () => chat('oa-json/m'), 'oa-json'],
  ['OpenAI Responses passthrough', () => responses('rs-json/m'), 'rs-json'],
  ['Anthropic Messages passthrough', () => messages('an-json/m'), 'an-json'],
  ['Gemini passthrough, streamGenerateContent?alt=sse', () => gemini('gm-json/m', 'sse'), 'gm-json'],
  ['translated, a Chat client to Anthropic', () => chat('an-json/m'), 'an-json'],
  ['translated, a Messages client to OpenAI Chat', () => messages('oa-json/m'), 'oa-json'],
];

for (const [name, call, provider] of refusals) {
  t.test(`${name}: a stream request answered with JSON is a 502 before any byte, recorded a failure`, async (t) => {
    const a = await call();
    t.equal(a.status, 502);
    t.match(a.type, /^application\/json/);
    t.match(JSON.parse(a.text), {
      error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', type: 'upstream_error', message: /answered a stream request with application\/json, not an event stream/, request_id: a.id },
    });
    // The whole answer is what the provider billed: its usage is the row's (before, none: $0 recorded).
    t.match(await rowOf(a.id), {
      status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', provider, stream: true,
      input_tokens: 11, output_tokens: 3, usage_source: 'reported', cost: '0.000014',
    });
    t.match(JSON.parse(a.text), { error: { message: /its usage is recorded/ } });
    const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === a.id);
    t.equal(span?.attributes['error.type'], 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the span says why');
  });
}

t.test('Gemini streamGenerateContent without alt=sse answers a JSON array: served as it came, its usage recorded', async (t) => {
  for (const provider of ['gm-json', 'gm-ok']) {
    const a = await gemini(`${provider}/m`, '');
    t.equal(a.status, 200, provider);
    t.equal(up.sent.accept, 'application/json', 'asked for the JSON it expects, not an event stream');
    t.match(a.type, /^application\/json/);
    t.equal(a.text, up.sent.text, 'the upstream bytes unchanged');
    t.ok(Array.isArray(JSON.parse(a.text)), 'a JSON array of chunks');
    t.match(await rowOf(a.id), { status: 'success', http_status: 200, provider, stream: true, input_tokens: 11, output_tokens: 3, usage_source: 'reported' });
  }
});

t.test('Gemini streamGenerateContent?alt=sse answered with an event stream is relayed (the check lets streams by)', async (t) => {
  const a = await gemini('gm-ok/m', 'sse');
  t.equal(a.status, 200);
  t.equal(up.sent.accept, 'text/event-stream', 'asked for an event stream');
  t.match(a.type, /^text\/event-stream/);
  t.equal(a.text, up.sent.text);
  t.match(await rowOf(a.id), { status: 'success', input_tokens: 11, output_tokens: 3, usage_source: 'reported' });
});

t.test('Anthropic passthrough, streamed, a well-behaved upstream: still relayed byte for byte', async (t) => {
  const a = await messages('an-ok/m');
  t.equal(a.status, 200);
  t.equal(a.text, up.sent.text);
  t.match(await rowOf(a.id), { status: 'success', input_tokens: 11, output_tokens: 3 });
});

t.test('a fallback combo moves on past a member that answers a stream request with JSON', async (t) => {
  const a = await messages('fb');
  t.equal(a.status, 200);
  t.match(a.type, /^text\/event-stream/);
  t.match(a.text, /event: message_stop/);
  t.match(await rowOf(a.id), { status: 'success', provider: 'an-ok', combo: 'fb' });
  await gw.flush();
  const rows = await gw.rows(`request_id = '${a.id}' OR parent_id = '${a.id}'`);
  const refused = rows.find((r) => r.provider === 'an-json-c');
  t.match(refused, { kind: 'attempt', status: 'failure', input_tokens: 11, output_tokens: 3, usage_source: 'reported' }, "the refused member's billed usage, its own attempt");
  const combo = rows.find((r) => r.kind === 'combo');
  t.equal(Number(combo?.cost), 0.000028, 'the combo costs both members');
});
