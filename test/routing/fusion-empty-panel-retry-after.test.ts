// From a review of the fusion judge's quota reservation: a panel left empty because the judge's reservation used the
// last request of a member's provider answered 503 with a Retry-After of the quota's reset (about 12 h) although the
// other member was only cooling for seconds: the Retry-After took the usable members only, the cooling one having been
// passed over already. It now takes every member of the combo: the first moment any of them is usable again.
import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';

const one = await startFakeOpenAI(t);
const cool = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
const models = { a: { kind: 'llm' }, b: { kind: 'llm' } };
const gw = await startApp(t, {
  routing: { cooldown: { initial_s: 30 } },
  providers: {
    one: fakeProvider(one.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 1 } }),
    cool: fakeProvider(cool.baseUrl, { models }),
    spare: fakeProvider(spare.baseUrl, { models }),
  },
  combos: {
    warm: { strategy: 'fallback', models: ['cool/a', 'spare/a'] },
    fz: { strategy: 'fusion', models: ['one/a', 'cool/a'], judge: 'one/b' },
  },
});
const chat = async (model: string) => {
  const res = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  const text = await res.body.text();
  return { status: res.statusCode, retryAfter: Number(res.headers['retry-after']), text };
};

t.test('an emptied panel\'s Retry-After is the cooling member\'s return, not the quota\'s reset', async (t) => {
  cool.next({ kind: 'error', status: 500, body: { error: { message: 'x' } } });
  t.equal((await chat('warm')).status, 200, 'cool failed once (cooling 30 s), spare answered');
  const r = await chat('fz');
  t.equal(r.status, 503, r.text.slice(0, 200));
  t.match(JSON.parse(r.text), { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' } });
  t.equal(one.received.length, 0, 'nothing sent to the provider the judge holds');
  t.ok(r.retryAfter >= 1 && r.retryAfter <= 30, `Retry-After ${r.retryAfter} s: when cool is back (30 s), not one's daily reset`);
});
