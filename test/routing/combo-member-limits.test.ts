// A combo member that cannot carry a parameter of the request (the gateway's own 400 TOLLGATE_ERR_NOT_SUPPORTED, made
// before any call: `n` > 1 to an Anthropic provider) is that member's limit, not the request's fault: the next member
// is tried, and the provider is not cooled (docs/routing.md, "When the next member is tried"). Before, the combo
// stopped at it: a fallback combo answered 400 though its next member takes `n`, and a round-robin combo answered
// 400 or 200 by whose turn it was. When no member can carry it, the client gets the 400 as before.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { startFakeAnthropic, fakeAnthropicProvider } from '../helpers/fake-anthropic.js';
import { attemptRowsOf } from '../helpers/clients.js';

const oa = await startFakeOpenAI(t);
const an = await startFakeAnthropic(t);
const gw = await startApp(t, {
  providers: { an: fakeAnthropicProvider(an.url), oa: fakeProvider(oa.baseUrl, { models: { 'gpt-4o': { kind: 'llm' } } }) },
  combos: {
    fb: { strategy: 'fallback', models: ['an/claude-sonnet-4-5', 'oa/gpt-4o'] },
    rr: { strategy: 'round-robin', models: ['an/claude-sonnet-4-5', 'oa/gpt-4o'] },
    only: { strategy: 'fallback', models: ['an/claude-sonnet-4-5'] },
  },
});
const post = async (body: unknown) => {
  const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, id: r.headers.get('x-request-id')!, body: await r.text() };
};
const ask = (model: string) => ({ model, n: 2, messages: [{ role: 'user', content: 'hello' }] });

t.test('fallback: the member that cannot take n=2 is passed over, the next one answers', async (t) => {
  const before = oa.received.length;
  const r = await post(ask('fb'));
  t.equal(r.status, 200, 'the OpenAI member answered');
  t.equal(oa.received.length - before, 1, 'one call to the OpenAI member');
  t.match(oa.received.at(-1)!.body, { n: 2 }, 'which was asked for two choices');
  t.equal(an.received.length, 0, 'none to the Anthropic member: refused before any call');
  const { parent, attempts } = await attemptRowsOf(gw, r.id, 2);
  t.match(attempts.map((a) => [a.attempt, a.model, a.status, a.error_type]), [[1, 'an/claude-sonnet-4-5', 'failure', 'TOLLGATE_ERR_NOT_SUPPORTED'], [2, 'oa/gpt-4o', 'success', '']]);
  t.match(parent, { kind: 'combo', status: 'success', http_status: 200 });
  t.notOk(gw.app.tollgate.router.isCooling('an'), 'the Anthropic provider is not cooled: nothing is wrong with it');
});

t.test('round-robin: the same request answers 200 whoever is first', async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await post(ask('rr'))).status);
  t.same(statuses, [200, 200, 200, 200]);
});

t.test('no member can carry it: the 400 as before', async (t) => {
  const r = await post(ask('only'));
  t.equal(r.status, 400);
  t.match(JSON.parse(r.body), { error: { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param: 'n' } });
});
