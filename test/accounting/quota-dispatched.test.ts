// A request quota counts the calls that went out upstream, not the rows (docs/quota.md, "What counts"). A request the
// gateway refuses itself before any call (a `400 TOLLGATE_ERR_NOT_SUPPORTED`: `n: 2` to an Anthropic provider; a combo
// attempt refused so) or whose connection was never made (a refused port) is a row with `dispatched` false, and
// counts toward no `daily_requests` quota: before, each counted as one request, so a provider the gateway never
// called looked used up, and combos skipped it. A call that went out and timed out counts.
// Real gateway, fake upstreams on 127.0.0.1, the embedded store, the in-memory span exporter.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { freePort } from '../helpers/net.js';
import { startFakeOAuth } from '../helpers/fake-oauth.js';

const an = await startFakeAnthropic(t);
const slow = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
const oaUp = await startFakeOpenAI(t);
const auth = await startFakeOAuth(t);
const models = { m: { kind: 'llm' } };
const daily = (limit: number) => ({ quota: { kind: 'daily_requests', limit } });
const gw = await startApp(t, {
  providers: {
    an: fakeAnthropicProvider(an.url, daily(3)),
    // Nothing listens on this port: every connection is refused.
    dead: fakeProvider(`http://127.0.0.1:${await freePort()}/v1`, { models, ...daily(2) }),
    slow: fakeProvider(slow.baseUrl, { models, ...daily(5) }),
    spare: fakeProvider(spare.baseUrl, { models }),
    // Signed in with OAuth, never connected (`tollgate connect oa` not run).
    oa: fakeProvider(oaUp.baseUrl, { models, group: 'subscription', auth: { type: 'oauth', oauth: auth.settings() }, ...daily(2) }),
  },
  combos: {
    fbn: { strategy: 'fallback', models: ['an/claude-sonnet-4-5', 'spare/m'] },
    oac: { strategy: 'fallback', models: ['oa/m', 'spare/m'] },
  },
});

const msgs = [{ role: 'user', content: 'hi' }];
const chat = async (body: Record<string, unknown>) => {
  const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text, id: r.headers.get('x-request-id')! };
};
interface Entry { id: string; exhausted: boolean; quota: { used: number; limit: number } }
/** /api/quota's entry of `id`, read anew: a snapshot is not served past a batch stored, nor past a second. */
const quota = async (id: string): Promise<Entry> => {
  await gw.flush();
  await new Promise((r) => setTimeout(r, 1100));
  const body = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: Entry[] };
  return body.providers.find((p) => p.id === id)!;
};

t.test('requests refused before any call count toward no request quota; a real call counts one', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await chat({ model: 'an/claude-sonnet-4-5', messages: msgs, n: 2 });
    t.equal(r.status, 400, r.text);
    t.match(r.text, /TOLLGATE_ERR_NOT_SUPPORTED/);
    ids.push(r.id);
  }
  t.equal(an.received.length, 0, 'the provider received nothing');
  const refused = await gw.rows(`provider = 'an'`);
  t.same(refused.map((r) => [r.kind, r.error_type, r.dispatched]), Array(4).fill(['request', 'TOLLGATE_ERR_NOT_SUPPORTED', false]), 'four rows, none dispatched');
  const before = await quota('an');
  t.same([before.quota.used, before.quota.limit, before.exhausted], [0, 3, false], '0 of 3 used (before: 4 of 3, exhausted)');

  const ok = await chat({ model: 'an/claude-sonnet-4-5', messages: msgs });
  t.equal(ok.status, 200, ok.text);
  t.equal(an.received.length, 1);
  const [row] = await gw.rows(`request_id = '${ok.id}'`);
  t.equal(row!.dispatched, true, 'the call that went out is dispatched');
  t.equal((await quota('an')).quota.used, 1, 'a real call counts one');

  // The span says what the row says.
  const spans = gw.spans.getFinishedSpans();
  const span = (id: string) => spans.find((s) => s.attributes['tollgate.request_id'] === id)!;
  t.equal(span(ids[0]!).attributes['tollgate.dispatched'], false, 'the refused request\'s span: not dispatched');
  t.equal(span(ok.id).attributes['tollgate.dispatched'], true, 'the call\'s span: dispatched');
});

t.test('a combo attempt refused before its call does not make its member look used up to the combos\' verdict', async (t) => {
  // `an` has 1 of 3 used. Five combo requests with n: 2: each refused by `an` before its call, answered by the spare.
  for (let i = 0; i < 5; i++) t.equal((await chat({ model: 'fbn', messages: msgs, n: 2 })).status, 200);
  t.equal(an.received.length, 1, 'the refused attempts reached nothing');
  t.equal(spare.received.length, 5);
  const attempts = await gw.rows(`provider = 'an' AND kind = 'attempt'`);
  t.same(attempts.map((r) => r.dispatched), Array(5).fill(false), 'five attempt rows on an, none dispatched');
  // At once (the calls not stored yet, the verdict's own count) and once stored: `an` still has 2 left.
  const next = await chat({ model: 'fbn', messages: msgs });
  t.equal(next.status, 200, next.text);
  t.equal(an.received.length, 2, 'the next combo request goes to an (before: skipped as used up)');
  t.equal(spare.received.length, 5, 'not to the spare');
  const entry = await quota('an');
  t.same([entry.quota.used, entry.exhausted], [2, false], '2 of 3 used');
  t.equal((await chat({ model: 'fbn', messages: msgs })).status, 200);
  t.equal(an.received.length, 3, 'its last request');
  t.equal((await chat({ model: 'fbn', messages: msgs })).status, 200);
  t.equal(an.received.length, 3, 'then it is used up, by its calls: the spare answers');
  t.equal(spare.received.length, 6);
});

t.test('a connection refused is no call; a call that timed out after it was sent is one', async (t) => {
  for (let i = 0; i < 3; i++) t.equal((await chat({ model: 'dead/m', messages: msgs })).status, 502);
  const dead = await gw.rows(`provider = 'dead'`);
  t.same(dead.map((r) => [r.error_type, r.dispatched]), Array(3).fill(['TOLLGATE_ERR_UPSTREAM_CONNECT', false]), 'three refused connections, none dispatched');
  const d = await quota('dead');
  t.same([d.quota.used, d.exhausted], [0, false], '0 of 2 used (before: 3 of 2, exhausted)');

  // The upstream takes the request and answers only once the gateway has given up on it (its stall timeout, 1 s, for
  // the response to start): the provider had it.
  let answered = (): void => undefined;
  slow.answerWith(() => ({ kind: 'ok', after: new Promise<void>((resolve) => (answered = resolve)) }));
  const r = await chat({ model: 'slow/m', messages: msgs, stream: true });
  answered();
  t.equal(r.status, 504, r.text);
  t.equal(slow.received.length, 1, 'the provider received it');
  const [row] = await gw.rows(`request_id = '${r.id}'`);
  t.same([row!.error_type, row!.dispatched], ['TOLLGATE_ERR_UPSTREAM_TIMEOUT', true], 'timed out, dispatched');
  t.equal((await quota('slow')).quota.used, 1, 'it counts');
});

t.test('an OAuth provider not connected: its requests fail fast and eat none of its daily request quota', async (t) => {
  for (let i = 0; i < 3; i++) {
    const r = await chat({ model: 'oa/m', messages: msgs });
    t.equal(r.status, 502);
    t.match(r.text, /TOLLGATE_ERR_PROVIDER_AUTH/);
  }
  const before = spare.received.length;
  for (let i = 0; i < 3; i++) t.equal((await chat({ model: 'oac', messages: msgs })).status, 200, 'the combo\'s spare answers');
  t.equal(spare.received.length - before, 3);
  t.equal(oaUp.received.length, 0, 'nothing reached the provider');
  const rows = await gw.rows(`provider = 'oa'`);
  t.same(rows.map((r) => [r.kind, r.dispatched]), [...Array(3).fill(['request', false]), ...Array(3).fill(['attempt', false])], 'six rows, none dispatched');
  const e = await quota('oa');
  t.same([e.quota.used, e.exhausted], [0, false], '0 of 2 used (before: 6 of 2, exhausted, and the combo skipped it)');
});
