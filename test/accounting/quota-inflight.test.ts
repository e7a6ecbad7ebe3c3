// A combo stops calling a provider once its quota is used up, counting what the last snapshot cannot know yet: the
// calls this gateway made since (published, not stored) and, for a quota counted in requests, its attempts still in
// flight (src/accounting/quota-routing.ts). Before, the combo read the last snapshot alone (up to a second old, and a
// call counted only once its record was published): 20 requests at once all went to a provider with 3 left.
// Against real upstreams on 127.0.0.1 and the real store: what each fake received, and the attempt rows.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';

const lim = await startFakeOpenAI(t);
const seq = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
// The limited provider answers after a while, so that the requests sent at once are all in flight together.
lim.answerWith(() => ({ kind: 'ok', delayMs: 300 }));
const models = { m: { kind: 'llm' } };
const gw = await startApp(t, {
  providers: {
    lim: fakeProvider(lim.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 3 } }),
    seq: fakeProvider(seq.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 3 } }),
    spare: fakeProvider(spare.baseUrl, { models }),
  },
  combos: {
    race: { strategy: 'fallback', models: ['lim/m', 'spare/m'] },
    back: { strategy: 'fallback', models: ['seq/m', 'spare/m'] },
  },
});

const chat = async (model: string) => {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.body.text();
  return res.statusCode;
};
const attempts = async (provider: string) => (await gw.rows(`provider = '${provider}' AND kind = 'attempt'`)).length;

t.test('20 requests at once: 3 reach the provider with 3 requests left, the rest its spare', async (t) => {
  const statuses = await Promise.all(Array.from({ length: 20 }, () => chat('race')));
  t.same(statuses, Array(20).fill(200), 'every request answered');
  t.equal(lim.received.length, 3, 'the limited provider received its 3 requests, no more');
  t.equal(spare.received.length, 17, 'the spare received the other 17');
  t.equal(await attempts('lim'), 3, '3 attempt rows on the limited provider');
  t.equal(await attempts('spare'), 17);
});

t.test('10 requests one after another: the 4th goes to the spare', async (t) => {
  const before = spare.received.length;
  for (let i = 0; i < 10; i++) t.equal(await chat('back'), 200);
  t.equal(seq.received.length, 3, 'the limited provider received 3 requests');
  t.equal(spare.received.length - before, 7);
  t.equal(await attempts('seq'), 3);
});
