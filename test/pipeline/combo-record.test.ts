// A combo's record, three findings of the combo review (s12e): an attempt refused before its upstream call had a row
// and a metric but no span (the trace showed one attempt fewer than the rows); a fusion whose members all answered
// without text left a combo row naming no member and no error type (counted under `_other`); a thinking suffix on a
// combo named in a Gemini URL never reached the members (it did from a body's model; the auto-switch's target:
// combo-switch-suffix.test.ts, a gateway of its own: one embedded store a process).
// Real gateway, fake upstreams on sockets, the embedded store, the in-memory span exporter of the helpers.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';

const fakes = { a: await startFakeOpenAI(t), b: await startFakeOpenAI(t), j: await startFakeOpenAI(t), p: await startFakeOpenAI(t) };
const an = await startFakeAnthropic(t);
const provider = (id: keyof typeof fakes) =>
  fakeProvider(fakes[id].baseUrl, { name: `Fake ${id}`, price: { input: 1, output: 2, cached: 0.5 }, models: { m: { kind: 'llm', capabilities: ['reasoning'] } } });
const gw = await startApp(t, {
  providers: { a: provider('a'), b: provider('b'), j: provider('j'), p: provider('p'), an: fakeAnthropicProvider(an.url) },
  combos: {
    fb: { strategy: 'fallback', models: ['a/m', 'b/m'] },
    fbn: { strategy: 'fallback', models: ['an/claude-sonnet-4-5', 'a/m'] },
    panel: { strategy: 'fusion', models: ['a/m', 'b/m'], judge: 'j/m' },
  },
});
const post = (path: string, body: unknown) => fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const msgs = [{ role: 'user', content: 'hi' }];
const effortSeenBy = (f: keyof typeof fakes) => fakes[f].received.at(-1)?.body.reasoning_effort;

t.test('an attempt refused before its call has its CLIENT span, as its row', async (t) => {
  // Anthropic takes no `n`: the first member refuses the request before any call, the second answers.
  const r = await post('/v1/chat/completions', { model: 'fbn', messages: msgs, n: 2 });
  t.equal(r.status, 200);
  await r.text();
  const id = r.headers.get('x-request-id')!;
  await gw.flush();
  const attempts = await gw.rows(`parent_id = '${id}'`);
  t.same(attempts.map((x) => [Number(x.attempt), x.provider, x.error_type]).sort(), [[1, 'an', 'TOLLGATE_ERR_NOT_SUPPORTED'], [2, 'a', '']], 'two attempt rows');
  const spans = gw.spans.getFinishedSpans();
  const server = spans.find((s) => s.attributes['tollgate.request_id'] === id)!;
  const kids = spans.filter((s) => s.parentSpanContext?.spanId === server.spanContext().spanId);
  t.same(kids.map((k) => k.attributes['tollgate.attempt']).sort(), [1, 2], 'one CLIENT child per attempt row');
  const refused = kids.find((k) => k.attributes['tollgate.attempt'] === 1)!;
  t.match(refused.attributes, { 'error.type': 'TOLLGATE_ERR_NOT_SUPPORTED', 'tollgate.provider': 'an', 'tollgate.request_id': attempts.find((x) => Number(x.attempt) === 1)!.request_id });
  t.equal(refused.attributes['url.full'], undefined, 'no URL: no request was made');
});

t.test('a fusion whose members all answer without text: the combo row names the last member and the error', async (t) => {
  fakes.a.next({ kind: 'ok', words: [] });
  fakes.b.next({ kind: 'ok', words: [] });
  const r = await post('/v1/chat/completions', { model: 'panel', messages: msgs });
  const body = await r.text();
  t.equal(r.status, 502, body);
  const id = r.headers.get('x-request-id')!;
  await gw.flush();
  const [row] = await gw.rows(`request_id = '${id}'`);
  t.match(row, { kind: 'combo', status: 'failure', model: 'b/m', provider: 'b', error_type: 'TOLLGATE_ERR_FUSION_NO_ANSWER' });
  t.equal(Number(row!.http_status), 502);
  const metrics = await gw.metrics();
  t.match(metrics, /tollgate_combo_requests_total\{[^}]*combo="panel"[^}]*provider="b"[^}]*status="failure"[^}]*\} 1/, 'counted under the member, not _other');
});

t.test('a thinking suffix on a combo reaches its members from a Gemini URL as from a body', async (t) => {
  await (await post('/v1/chat/completions', { model: 'fb(high)', messages: msgs })).text();
  t.equal(effortSeenBy('a'), 'high', 'a Chat body naming fb(high)');
  const r = await post('/v1beta/models/fb(high):generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
  t.equal(r.status, 200);
  await r.text();
  t.equal(effortSeenBy('a'), 'high', 'a Gemini URL naming fb(high)');
});
