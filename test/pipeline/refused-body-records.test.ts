// A request refused for its body before its handler runs (bad JSON, too large) is recorded when it is a model call
// (a row, a span, the request metrics: docs/recording.md), and leaves nothing when it is not one: Gemini's
// countTokens (as /v1/messages/count_tokens, docs/api.md), and a path the Gemini wildcards take that names no call
// (/v1/embeddings, /v1beta/whatever), which valid JSON gets a 404 for. Before, those were recorded as a
// generate_content call of model `_other` whenever the body was refused.

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const gw = await startApp(t, { server: { body_limit_bytes: 4096 }, providers: { demo: DEMO_PROVIDER } });

async function post(path: string, body: string): Promise<{ status: number; id: string | null }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.text();
  return { status: res.status, id: res.headers.get('x-request-id') };
}
const requestsTotal = async () => {
  const text = await gw.metrics();
  return [...text.matchAll(/^tollgate_requests_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
};

const notCalls: [string, string, number][] = [
  ['Gemini countTokens, bad JSON', '/v1beta/models/demo/echo-1:countTokens', 400],
  ['Gemini countTokens, too large', '/v1beta/models/demo/echo-1:countTokens', 413],
  ['a path with no Gemini action', '/v1/embeddings', 404], // no route, whatever the body (docs/api.md)
  ['another', '/v1beta/whatever', 404],
];
for (const [name, path, status] of notCalls) {
  t.test(`${name}: refused, and nothing recorded`, async (t) => {
    const before = { rows: (await gw.rows()).length, spans: gw.spans.getFinishedSpans().length, metric: await requestsTotal() };
    const body = status === 413 ? `{"contents":"${'x'.repeat(5000)}"}` : '{"contents": [';
    const res = await post(path, body);
    t.equal(res.status, status);
    await gw.flush();
    t.equal((await gw.rows()).length, before.rows, 'no row');
    t.equal(gw.spans.getFinishedSpans().length, before.spans, 'no span');
    t.equal(await requestsTotal(), before.metric, 'no request counted');
  });
}

t.test('a generateContent call refused for its body is recorded, once each way', async (t) => {
  const before = { rows: (await gw.rows()).length, metric: await requestsTotal() };
  const res = await post('/v1beta/models/demo/echo-1:generateContent', '{"contents": [');
  t.equal(res.status, 400);
  await gw.flush();
  const rows = await gw.rows();
  t.equal(rows.length, before.rows + 1, 'one row');
  t.match(rows.at(-1), { endpoint: 'generate_content', status: 'failure', http_status: 400 });
  t.equal(await requestsTotal(), before.metric + 1, 'one request counted');
});
