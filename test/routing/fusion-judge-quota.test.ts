// A fusion combo's judge is not called on a provider out of quota (src/pipeline/combo/fusion.ts runFusion). The judge
// is checked before the panel: out of quota, no member is asked (the answer could not be judged) and the client gets
// the 503 TOLLGATE_ERR_NO_MEMBER_AVAILABLE of a combo that cannot run now, with Retry-After from the quota's reset, as
// for a combo whose every member is out of quota. Otherwise its call is counted in flight from the start, so panel
// members on its provider cannot use up the request it needs. Before, the judge was called with no quota check.
// A judge on a provider cooling down after failures is refused the same way, Retry-After the cooldown's end (as a
// member on such a provider is skipped); before, only its quota was checked and the cooling judge was called. Both
// are checked again right before the judge's call: the panel may have cooled its provider or used up its quota.
// Against real upstreams on 127.0.0.1 and the real store: what each fake received, the answers, the rows.

import t from 'tap';
import { request } from 'undici';
import { startApp, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';
import { quotaDecides } from '../../src/routing/combos.js';

const lim = await startFakeOpenAI(t);
const shared = await startFakeOpenAI(t);
const one = await startFakeOpenAI(t);
const spare = await startFakeOpenAI(t);
const cooling = await startFakeOpenAI(t);
const calm = await startFakeOpenAI(t);
const selfp = await startFakeOpenAI(t);
const selfq = await startFakeOpenAI(t);
const tok = await startFakeOpenAI(t);
const tokq = await startFakeOpenAI(t);
const models = { a: { kind: 'llm' }, b: { kind: 'llm' } };
const raw = {
  providers: {
    lim: fakeProvider(lim.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 1 } }),
    shared: fakeProvider(shared.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 2 } }),
    one: fakeProvider(one.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 1 } }),
    spare: fakeProvider(spare.baseUrl, { models }),
    cooling: fakeProvider(cooling.baseUrl, { models }),
    calm: fakeProvider(calm.baseUrl, { models }),
    selfp: fakeProvider(selfp.baseUrl, { models }),
    selfq: fakeProvider(selfq.baseUrl, { models }),
    tok: fakeProvider(tok.baseUrl, { group: 'free', models, quota: { kind: 'daily_tokens', limit: 5 } }),
    tokq: fakeProvider(tokq.baseUrl, { models }),
  },
  combos: {
    first: { strategy: 'fallback', models: ['lim/a', 'spare/a'] },
    judged: { strategy: 'fusion', models: ['spare/a', 'spare/b'], judge: 'lim/a' },
    beside: { strategy: 'fusion', models: ['shared/a', 'shared/b', 'spare/a'], judge: 'shared/a' },
    alone: { strategy: 'fusion', models: ['one/a'], judge: 'one/b' },
    fails: { strategy: 'fallback', models: ['cooling/a', 'calm/a'] },
    cooled: { strategy: 'fusion', models: ['calm/a', 'calm/b'], judge: 'cooling/a' },
    self: { strategy: 'fusion', models: ['selfp/a', 'selfq/a'] }, // the judge: selfp/a, a member too
    spent: { strategy: 'fusion', models: ['tok/a', 'tokq/a'], judge: 'tok/b' },
  },
};
const gw = await startApp(t, raw);

const chat = async (model: string) => {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const json = (await res.body.json()) as { model?: string; error?: { code?: string; message?: string; request_id?: string } };
  return { status: res.statusCode, retryAfter: res.headers['retry-after'], requestId: res.headers['x-request-id'], json };
};
const modelsOf = (up: typeof lim) => up.received.map((r) => (r.body as { model?: string }).model).sort();
const nextReset = async (id: string) => {
  const q = (await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: { id: string; reset: { nextReset: string } }[] };
  return q.providers.find((p) => p.id === id)!.reset.nextReset;
};

t.test('the judge out of quota: no member is asked, a 503 with Retry-After from its reset', async (t) => {
  t.equal((await chat('first')).status, 200, "the judge's provider used its one request");
  t.equal(lim.received.length, 1);
  const r = await chat('judged');
  t.match(r, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' } } });
  t.equal(lim.received.length, 1, 'the judge was not called');
  t.equal(spare.received.length, 0, 'no panel member was asked');
  const want = (Date.parse(await nextReset('lim')) - Date.now()) / 1000;
  t.ok(typeof r.retryAfter === 'string' && Math.abs(Number(r.retryAfter) - want) <= 3, `Retry-After ${String(r.retryAfter)} against ${want.toFixed(0)} s to the reset`);
  const rows = await gw.rows(`combo = 'judged' OR request_id = '${String(r.requestId)}'`);
  t.equal(rows.length, 1, 'the client row alone, no attempt row');
  t.match(rows[0], { kind: 'combo', status: 'failure', http_status: 503, error_type: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' });
});

t.test("the judge's provider shared with members: its request is kept for the judge", async (t) => {
  const r = await chat('beside');
  t.equal(r.status, 200);
  t.equal(r.json.model, 'shared/a', "the judge's answer");
  t.same(modelsOf(shared), ['a', 'a'], 'shared/a as a member and as the judge; shared/b skipped (2 requests in all)');
  t.same(modelsOf(spare), ['a'], 'spare/a');
  const attempts = await gw.rows(`combo = 'beside' AND kind = 'attempt'`);
  t.same(attempts.map((a) => `${String(a.model)}#${String(a.attempt)}`).sort(), ['shared/a#1', 'shared/a#3', 'spare/a#2']);
});

t.test('no member fits beside the judge: a 503, nothing sent', async (t) => {
  const r = await chat('alone');
  t.match(r, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' } } });
  t.ok(typeof r.retryAfter === 'string' && Number(r.retryAfter) > 0, `Retry-After ${String(r.retryAfter)}`);
  t.equal(one.received.length, 0);
  t.equal((await gw.rows(`combo = 'alone' AND kind = 'attempt'`)).length, 0, 'no attempt row');
  // Its limit raised to 2: the judge's reservation of the 503 given back, the member and the judge fit.
  const limits = { ...raw.providers, one: fakeProvider(one.baseUrl, { group: 'free', models, quota: { kind: 'daily_requests', limit: 2 } }) };
  gw.holder.replace(testConfig({ ...raw, providers: limits }, gw.holder.current.storage.data_dir));
  const again = await chat('alone');
  t.equal(again.status, 200, 'the reservation of the refused request was given back');
  t.equal(again.json.model, 'one/b');
  t.same(modelsOf(one), ['a', 'b']);
});

t.test("the judge's provider cooling: neither the judge nor any member is called, a 503 with the cooldown's end", async (t) => {
  // The judge's provider fails once (a 429 asking for 120 s): it cools down for 120 s; the fallback answers.
  cooling.next({ kind: 'error', status: 429, body: { error: { message: 'slow down', type: 'rate_limit' } }, headers: { 'retry-after': '120' } });
  const first = await chat('fails');
  t.match(first, { status: 200, json: { model: 'calm/a' } }, 'the fallback member answered');
  t.same([cooling.received.length, calm.received.length], [1, 1]);
  const q = (await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: { id: string; cooldown: { cooling: boolean; remaining_s: number } }[] };
  const cooldown = q.providers.find((p) => p.id === 'cooling')!.cooldown;
  t.equal(cooldown.cooling, true, "the judge's provider is cooling");

  const r = await chat('cooled');
  t.equal(cooling.received.length, 1, 'the cooling judge received no request');
  t.equal(calm.received.length, 1, 'no panel member was asked');
  t.match(r, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE', message: /judge of combo 'cooled' \(cooling\/a\) is cooling down/ } } });
  t.ok(typeof r.retryAfter === 'string' && Math.abs(Number(r.retryAfter) - cooldown.remaining_s) <= 3, `Retry-After ${String(r.retryAfter)} against ${cooldown.remaining_s} s of cooldown left`);
  const rows = await gw.rows(`combo = 'cooled' OR request_id = '${String(r.requestId)}'`);
  t.equal(rows.length, 1, 'the client row alone, no attempt row');
  t.match(rows[0], { kind: 'combo', status: 'failure', http_status: 503, error_type: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' });
});

// The judge was checked before the panel only: a judge that is also a member, its member call answered a 429 (its
// provider cooling for the 120 s asked), was called right after anyway. It is checked again right before its call.
t.test("the judge's provider cooled by its own member call: the judge is not called, a 503 with the cooldown's end", async (t) => {
  selfp.next({ kind: 'error', status: 429, body: { error: { message: 'slow down', type: 'rate_limit' } }, headers: { 'retry-after': '120' } });
  const r = await chat('self');
  t.equal(selfp.received.length, 1, 'selfp/a called once, as a member; not as the judge');
  t.equal(selfq.received.length, 1, 'the other member answered');
  const q = (await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: { id: string; cooldown: { cooling: boolean; remaining_s: number } }[] };
  const cooldown = q.providers.find((p) => p.id === 'selfp')!.cooldown;
  t.equal(cooldown.cooling, true, "the judge's provider is cooling");
  t.match(r, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE', message: /judge of combo 'self' \(selfp\/a\) is cooling down/ } } });
  t.ok(typeof r.retryAfter === 'string' && Math.abs(Number(r.retryAfter) - cooldown.remaining_s) <= 3, `Retry-After ${String(r.retryAfter)} against ${cooldown.remaining_s} s of cooldown left`);
  const rows = await gw.rows(`combo = 'self' OR request_id = '${String(r.requestId)}'`);
  const combo = rows.filter((x) => x.kind === 'combo');
  t.equal(combo.length, 1);
  t.match(combo[0], { requested_model: 'self', model: '_other', status: 'failure', http_status: 503, error_type: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' }, 'the client row: the 503');
  const attempts = rows.filter((x) => x.kind === 'attempt').map((x) => `${String(x.model)}#${String(x.attempt)} ${String(x.status)} ${String(x.http_status)}`).sort();
  t.same(attempts, ['selfp/a#1 failure 429', 'selfq/a#2 success 200'], "the panel's attempt rows; none for the judge");
});

// A judge whose provider's token quota the panel used up (its member call on the same provider: tokens are known only
// once a call has ended, so the check before the panel could not see them) is refused the same way.
t.test("the judge's token quota used up by the panel: the judge is not called, a 503 with Retry-After from its reset", async (t) => {
  const r = await chat('spent');
  t.same(modelsOf(tok), ['a'], 'tok/a as a member; tok/b, the judge, not called');
  t.equal(tokq.received.length, 1);
  t.match(r, { status: 503, json: { error: { code: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE', message: /judge of combo 'spent' \(tok\/b\) is out of quota/ } } });
  const want = (Date.parse(await nextReset('tok')) - Date.now()) / 1000;
  t.ok(typeof r.retryAfter === 'string' && Math.abs(Number(r.retryAfter) - want) <= 3, `Retry-After ${String(r.retryAfter)} against ${want.toFixed(0)} s to the reset`);
  const rows = await gw.rows(`combo = 'spent'`);
  t.same(rows.filter((x) => x.kind === 'attempt').map((x) => `${String(x.model)} ${String(x.http_status)}`).sort(), ['tok/a 200', 'tokq/a 200'], "the panel's attempt rows; none for the judge");
  // As every TOLLGATE_ERR_NO_MEMBER_AVAILABLE row: no model routed (the judge was never called), the combo named.
  t.match(rows.filter((x) => x.kind === 'combo'), [{ requested_model: 'spent', model: '_other', status: 'failure', http_status: 503, error_type: 'TOLLGATE_ERR_NO_MEMBER_AVAILABLE' }]);
});

t.test('a fusion combo whose judge alone has a quota waits for the figures at the start', async (t) => {
  const cfg = testConfig(raw, tempDir(t));
  t.equal(quotaDecides(cfg, 'judged'), true);
});
