// An upstream answer in a content-encoding (the gateway asks for none: a misbehaving upstream, or a proxy in between)
// is decoded in the transport, so every path sees the plain answer: gzip, deflate, br (and a list of them, and the
// old name x-gzip), whole or streamed, on the OpenAI Chat fast path, the same-format passthrough (Anthropic,
// Responses, Gemini) and the translated path. The client gets the decoded bytes and no content-encoding; the row has
// the upstream's usage. server.upstream_answer_limit_bytes counts the decoded bytes, so a gzip bomb (200 MB of zeros
// in about 200 KB) is refused as TOLLGATE_ERR_UPSTREAM_TOO_LARGE without the process growing by hundreds of MB. A
// coding the gateway cannot decode (zstd) or bytes that do not decode are a 502 TOLLGATE_ERR_UPSTREAM_PROTOCOL, except
// on an error status: a 429 in zstd reaches the client as a 429 with its Retry-After, its body replaced by a message
// naming the coding (before, a 502, and the Retry-After lost: a combo never knew the member was rate limited).
// Before, the passthrough relayed a gzip stream as binary garbage and every path failed a gzip JSON answer as "not JSON".

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeAnyFormat } from '../helpers/fake-any-format.js';
import { metricValue } from '../helpers/prom.js';

// Above the bomb's compressed size (about 200 KB), far below its decoded 200 MB: only a count of decoded bytes stops it.
const LIMIT = 1024 * 1024;
const up = await startFakeAnyFormat(t);
const MODES = ['ok', 'gzip', 'br', 'deflate', 'x-gzip', 'gzip-br', 'identity', 'error-gzip', 'error-zstd', 'error-bad-gzip', 'bomb', 'zstd', 'bad-gzip'];
const providers: Record<string, unknown> = {};
for (const mode of MODES) {
  providers[`oa-${mode}`] = fakeProvider(up.port, mode, 'openai');
  providers[`rs-${mode}`] = fakeProvider(up.port, mode, 'openai-responses');
  providers[`an-${mode}`] = fakeProvider(up.port, mode, 'anthropic');
  providers[`gm-${mode}`] = fakeProvider(up.port, mode, 'gemini');
}
// A fallback combo whose first member answers a 429 in zstd: the status and the Retry-After drive it as any 429's.
providers['cb-error-zstd'] = fakeProvider(up.port, 'error-zstd', 'openai');
const combos = { 'zstd-first': { strategy: 'fallback', models: ['cb-error-zstd/m', 'oa-ok/m'] } };
const gw = await startApp(t, { server: { upstream_answer_limit_bytes: LIMIT }, providers, combos });

interface Answer { status: number; type: string | null; encoding: string | null; text: string; id: string | null; retryAfter: string | null }

async function post(path: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  return {
    status: res.status, type: res.headers.get('content-type'), encoding: res.headers.get('content-encoding'), text: await res.text(),
    id: res.headers.get('x-request-id'), retryAfter: res.headers.get('retry-after'),
  };
}
const USER = [{ role: 'user', content: 'hello' }];

/** One client call: its path, and whether the client's bytes are the upstream's (a same-format path) or re-rendered. */
interface Path {
  readonly name: string;
  readonly prefix: string;
  readonly same: boolean;
  call(model: string, stream: boolean): Promise<Answer>;
}
const PATHS: readonly Path[] = [
  { name: 'the OpenAI Chat fast path', prefix: 'oa', same: true, call: (model, stream) => post('/v1/chat/completions', { model, stream, messages: USER, ...(stream ? { stream_options: { include_usage: true } } : {}) }) },
  { name: 'the Anthropic passthrough', prefix: 'an', same: true, call: (model, stream) => post('/v1/messages', { model, stream, max_tokens: 10, messages: USER }) },
  { name: 'the Responses passthrough', prefix: 'rs', same: true, call: (model, stream) => post('/v1/responses', { model, stream, input: 'hello' }) },
  {
    name: 'the Gemini passthrough', prefix: 'gm', same: true,
    call: (model, stream) => post(`/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
  },
  { name: 'the translated path (Anthropic client, OpenAI provider)', prefix: 'oa', same: false, call: (model, stream) => post('/v1/messages', { model, stream, max_tokens: 10, messages: USER }) },
];

async function rowOf(id: string | null): Promise<Record<string, unknown> | undefined> {
  await gw.flush();
  return (await gw.rows(`request_id = '${id}'`))[0];
}

for (const p of PATHS) {
  for (const stream of [false, true]) {
    for (const mode of ['gzip', 'br', 'deflate', 'x-gzip', 'gzip-br', 'identity']) {
      // Every coding whole; streams in gzip and br (the decoder is the same whatever the content type).
      if (stream && !['gzip', 'br', 'gzip-br'].includes(mode)) continue;
      t.test(`${p.name}, ${stream ? 'streamed' : 'whole'}, content-encoding ${mode}: decoded, usage recorded`, async (t) => {
        const a = await p.call(`${p.prefix}-${mode}/m`, stream);
        t.equal(a.status, 200);
        t.equal(a.encoding, null, 'no content-encoding to the client');
        t.match(a.type, stream ? /^text\/event-stream/ : /^application\/json/);
        if (p.same) t.equal(a.text, up.sent.text, "the client has the upstream's answer, decoded");
        else t.match(a.text, stream ? /event: message_stop/ : /"text":"hi"/, 'rendered from the decoded answer');
        t.match(await rowOf(a.id), { status: 'success', http_status: 200, input_tokens: 11, output_tokens: 3, usage_source: 'reported' });
      });
    }
  }

  t.test(`${p.name}: an error status with a gzip-encoded body reaches the client decoded`, async (t) => {
    const a = await p.call(`${p.prefix}-error-gzip/m`, false);
    t.equal(a.status, 429);
    t.equal(a.encoding, null);
    t.equal(a.retryAfter, '7');
    t.equal(a.text, up.sent.text, 'the error body as the upstream wrote it, decoded');
    t.match(await rowOf(a.id), { status: 'failure', http_status: 429 });
  });

  for (const stream of [false, true]) {
    t.test(`${p.name}, ${stream ? 'streamed' : 'whole'}: a 429 in content-encoding zstd is a 429 with its Retry-After, its body naming the coding`, async (t) => {
      const a = await p.call(`${p.prefix}-error-zstd/m`, stream);
      t.equal(a.status, 429, "the upstream's status");
      t.equal(a.retryAfter, '30', 'its Retry-After');
      t.equal(a.encoding, null, 'no content-encoding to the client');
      t.match(a.text, /answered 429 in content-encoding 'zstd', which the gateway does not decode/);
      t.match(await rowOf(a.id), { status: 'failure', http_status: 429, error_type: '429' });
    });
  }

  for (const stream of [false, true]) {
    t.test(`${p.name}, ${stream ? 'streamed' : 'whole'}: a 429 in gzip whose bytes do not decode is a 429 with its Retry-After`, async (t) => {
      const a = await p.call(`${p.prefix}-error-bad-gzip/m`, stream);
      t.equal(a.status, 429, "the upstream's status");
      t.equal(a.retryAfter, '30', 'its Retry-After');
      t.match(a.text, /answered 429 in content-encoding 'gzip', whose bytes do not decode/);
      t.match(await rowOf(a.id), { status: 'failure', http_status: 429, error_type: '429' });
    });
  }

  t.test(`${p.name}: a gzip bomb is refused at the limit of decoded bytes, the process not growing by hundreds of MB`, async (t) => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    t.ok(up.bombBytes < LIMIT, `the bomb is ${up.bombBytes} bytes compressed, within the limit`);
    const a = await p.call(`${p.prefix}-bomb/m`, false);
    const grew = process.memoryUsage().rss - before;
    t.equal(a.status, 502);
    t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE', message: /server\.upstream_answer_limit_bytes \(1048576\)/ } });
    t.ok(grew < 64 * 1024 * 1024, `the process grew by ${Math.round(grew / 1024 / 1024)} MB, not hundreds`);
    t.match(await rowOf(a.id), { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_TOO_LARGE' });
  });

  for (const stream of [false, true]) {
    t.test(`${p.name}, ${stream ? 'streamed' : 'whole'}: content-encoding zstd is refused (502 protocol, naming it)`, async (t) => {
      const a = await p.call(`${p.prefix}-zstd/m`, stream);
      t.equal(a.status, 502);
      t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', message: /content-encoding 'zstd'/ } });
      t.match(await rowOf(a.id), { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
      const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === a.id);
      t.equal(span?.attributes['error.type'], 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the span says why');
    });
  }

  t.test(`${p.name}: gzip bytes that do not decode are a 502 protocol failure`, async (t) => {
    const a = await p.call(`${p.prefix}-bad-gzip/m`, false);
    t.equal(a.status, 502);
    t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', message: /does not decode \(Z_DATA_ERROR\)/ } });
    t.match(await rowOf(a.id), { status: 'failure', error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
  });
}

t.test('a gzip-encoded stream that does not decode ends the started stream with the format error, recorded a failure', async (t) => {
  const a = await PATHS[1]!.call('an-bad-gzip/m', true);
  // The first bytes decide: nothing decodes, so the stream has opened and ends with the terminal error.
  t.equal(a.status, 200);
  t.match(a.text, /event: error/);
  t.match(await rowOf(a.id), { status: 'failure', error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
});

t.test('a combo member answering a 429 in zstd: the next member answers, the 429 and its Retry-After cool the first', async (t) => {
  const a = await PATHS[0]!.call('zstd-first', false);
  t.equal(a.status, 200);
  await gw.flush();
  const attempts = await gw.rows(`kind = 'attempt' AND combo = 'zstd-first'`);
  t.match(attempts.sort((x, y) => Number(x.attempt) - Number(y.attempt)), [{ provider: 'cb-error-zstd', http_status: 429, error_type: '429' }, { provider: 'oa-ok', status: 'success' }]);
  const text = await gw.metrics();
  t.equal(metricValue(text, 'tollgate_cooldowns_total', { provider: 'cb-error-zstd', reason: '429' }), 1, 'cooled for its 429');
  t.ok(metricValue(text, 'tollgate_provider_cooldown_seconds', { provider: 'cb-error-zstd' }) > 25, 'for at least its Retry-After (30 s)');
});

t.test('the gateway is still healthy after all of it (no crash from a destroyed body)', async (t) => {
  const a = await PATHS[0]!.call('oa-ok/m', false);
  t.equal(a.status, 200);
});
