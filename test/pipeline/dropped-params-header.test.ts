// x-tollgate-dropped-params names client body keys (unknown top-level keys, Responses `tools.<type>` and
// `include.<value>`), which may hold anything: the header is always a valid header value (each name percent-encoded
// past visible ASCII, and for `%`, `,` and spaces; the whole bounded with a `(N more)` marker), so a translated request
// with such keys is answered 200, whole or streamed, with one usage row and no cooldown for the provider (before, Node
// threw ERR_INVALID_CHAR: a fastify 500 and two rows, or a hijacked stream left hanging and the provider cooled as an
// upstream connect failure). The span attribute keeps the names as they came. Real gateway, real fake upstream.

import t from 'tap';
import type { Test } from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, { providers: { oa: fakeProvider(up.baseUrl) } });
const HEADER = 'x-tollgate-dropped-params';
/** The header's documented bound (docs/translation.md; MAX_DROPPED_HEADER in src/pipeline/forward.ts). */
const MAX_DROPPED_HEADER = 1024;

async function post(path: string, body: unknown): Promise<{ res: Response; text: string }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(5000),
  });
  return { res, text: await res.text() };
}

/** The request's rows, once it has one; then every row in the store, to see that no second one came. */
async function rowsOf(id: string): Promise<{ mine: Record<string, unknown>[]; all: number }> {
  await waitFor(async () => (await gw.rows(`toString(request_id) = '${id}'`)).length > 0);
  await new Promise((r) => setTimeout(r, 100));
  return { mine: await gw.rows(`toString(request_id) = '${id}'`), all: (await gw.rows()).length };
}

/** The request span of `id`, once it has ended. */
async function requestSpan(id: string) {
  const find = () => gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id);
  await waitFor(() => find() !== undefined);
  return find()!;
}

function notCooling(t: Test): void {
  const p = gw.app.tollgate.router.provider('oa');
  t.equal(p.cooling, false, 'the provider is not cooling');
  t.ok(p.connections.every((c) => c.state === null), 'no failure recorded for its connections');
}

const ODD = { 'é中': 1, 'a\u0000b': 2, 'x,y': 3, 'p%q': 4, 'sp ace': 5 };
const ODD_HEADER = 'a%00b, p%25q, sp%20ace, x%2Cy, %C3%A9%E4%B8%AD';
const message = (extra: Record<string, unknown>) => ({ model: 'oa/gpt-4o', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...extra });

let rowsSoFar = 0;

for (const stream of [false, true]) {
  t.test(`Anthropic Messages to an OpenAI provider, ${stream ? 'streamed' : 'whole'}: odd body keys are encoded in the header`, async (t) => {
    const { res, text } = await post('/v1/messages', message({ ...ODD, stream }));
    t.equal(res.status, 200);
    t.equal(res.headers.get(HEADER), ODD_HEADER);
    t.same(res.headers.get(HEADER)!.split(', ').map((n) => decodeURIComponent(n)).sort(), Object.keys(ODD).sort(), 'the names decode back');
    if (stream) t.match(text, /event: message_stop/, 'the stream finished');
    else t.equal((JSON.parse(text) as { type: string }).type, 'message');
    const id = res.headers.get('x-request-id')!;
    const { mine, all } = await rowsOf(id);
    t.equal(mine.length, 1, 'one row for the request');
    t.match(mine[0], { status: 'success', http_status: 200, error_type: '' });
    t.equal(all, rowsSoFar + 1, 'no other row was recorded');
    rowsSoFar = all;
    t.same((await requestSpan(id)).attributes['tollgate.dropped_params'], Object.keys(ODD).sort(), 'the span keeps the raw names');
    notCooling(t);
  });
}

for (const stream of [false, true]) {
  t.test(`Responses to an OpenAI provider, ${stream ? 'streamed' : 'whole'}: tools.<type> and include.<value> encoded`, async (t) => {
    const { res, text } = await post('/v1/responses', { model: 'oa/gpt-4o', input: 'hi', stream, tools: [{ type: '🙂' }], include: ['☃'] });
    t.equal(res.status, 200);
    t.equal(res.headers.get(HEADER), 'include.%E2%98%83, tools.%F0%9F%99%82');
    if (stream) t.match(text, /response\.completed/, 'the stream finished');
    const { mine, all } = await rowsOf(res.headers.get('x-request-id')!);
    t.equal(mine.length, 1, 'one row for the request');
    t.match(mine[0], { status: 'success', http_status: 200 });
    t.equal(all, rowsSoFar + 1, 'no other row was recorded');
    rowsSoFar = all;
    notCooling(t);
  });
}

t.test('the header is bounded: names past the bound are counted in a last "(N more)"', async (t) => {
  const keys = Array.from({ length: 200 }, (_, i) => `unknown_parameter_${String(i).padStart(3, '0')}`);
  const { res } = await post('/v1/messages', message(Object.fromEntries(keys.map((k) => [k, 1]))));
  t.equal(res.status, 200);
  const value = res.headers.get(HEADER)!;
  t.ok(value.length <= MAX_DROPPED_HEADER, `${value.length} characters`);
  const items = value.split(', ');
  const last = /^\((\d+) more\)$/.exec(items.pop()!);
  t.ok(last, 'the last item is the marker');
  t.same(items, keys.slice(0, items.length), 'the first names, in order');
  t.equal(items.length + Number(last![1]), keys.length, 'every name is listed or counted');
  t.ok(value.length > MAX_DROPPED_HEADER - 40, 'the room is used');

  const one = await post('/v1/messages', message({ ['k'.repeat(5000)]: 1, stream: true }));
  t.equal(one.res.status, 200);
  t.equal(one.res.headers.get(HEADER), '(1 more)', 'a single name longer than the bound is only counted');
  t.match(one.text, /event: message_stop/);
  const { mine } = await rowsOf(one.res.headers.get('x-request-id')!);
  t.equal(mine.length, 1);
  rowsSoFar = (await gw.rows()).length;
  notCooling(t);
});
