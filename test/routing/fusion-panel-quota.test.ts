// A fusion combo whose panel members share a provider calls it no more than its quota allows: each member is checked
// with the members before it counted in flight (src/pipeline/combo/fusion.ts askPanel), and one whose provider they
// use up is skipped like a member out of quota; the panel is the members that fit. Before, every member was judged
// once before any was counted: with 2 requests left, a panel of 3 members on the provider sent it 3.
// Against real upstreams on 127.0.0.1 and the real store: what each fake received, and the attempt rows.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';

const lim = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
const models = { a: { kind: 'llm' }, b: { kind: 'llm' }, c: { kind: 'llm' } };
const gw = await startApp(t, {
  providers: {
    lim: fakeProvider(lim.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 2 } }),
    spare: fakeProvider(spare.baseUrl, { models }),
  },
  combos: {
    panel: { strategy: 'fusion', models: ['lim/a', 'lim/b', 'lim/c', 'spare/a'], judge: 'spare/b' },
  },
});

t.test('a panel of 3 members on a provider with 2 requests left: 2 of them are asked', async (t) => {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'panel', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await res.body.json()) as { model?: string };
  t.equal(res.statusCode, 200, 'answered');
  t.equal(body.model, 'spare/b', "the judge's answer");
  const modelsOf = (up: typeof lim) => up.received.map((r) => (r.body as { model?: string }).model).sort();
  t.same(modelsOf(lim), ['a', 'b'], 'the limited provider got its 2 requests: lim/a and lim/b, not lim/c');
  t.same(modelsOf(spare), ['a', 'b'], 'spare/a, and the judge spare/b');
  const attempts = await gw.rows(`kind = 'attempt'`);
  t.same(attempts.map((r) => `${String(r.model)}#${String(r.attempt)}`).sort(), ['lim/a#1', 'lim/b#2', 'spare/a#3', 'spare/b#4'],
    'an attempt row per member asked and the judge, numbered in order; none for the member skipped');
  const quota = (await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: { id: string; exhausted: boolean; quota: { used: number } }[] };
  t.match(quota.providers.find((p) => p.id === 'lim'), { exhausted: true, quota: { used: 2 } });
});
