// The budget auto-switch routing step, tested directly (the budget evaluation arrives with the alerts): when the
// gate says the daily budget is exceeded and auto_switch is on, the target becomes the free model or combo, and the
// request, its row and its response say so.

import t from 'tap';
import OpenAI from 'openai';
import { autoSwitch } from '../../src/routing/auto-switch.js';
import { startApp, testConfig, DEMO_PROVIDER } from '../helpers/app.js';
import { spyFetch, rowOf } from '../helpers/clients.js';
import { tempDir } from '../helpers/tmp.js';
import { metricValue } from '../helpers/prom.js';

const raw = {
  providers: {
    paid: { ...DEMO_PROVIDER, group: 'paid' },
    free: { ...DEMO_PROVIDER, group: 'free', models: { 'llama-3.3-70b': { kind: 'llm' } } },
    sub: { ...DEMO_PROVIDER, group: 'subscription' },
  },
  combos: {
    freebies: { strategy: 'fallback', models: ['free/llama-3.3-70b'] },
    // Free members and a paid judge: the judge spends (before: taken for a free combo, never switched).
    panel: { strategy: 'fusion', models: ['free/llama-3.3-70b', 'sub/echo-1'], judge: 'paid/echo-1' },
    freepanel: { strategy: 'fusion', models: ['free/llama-3.3-70b', 'sub/echo-1'], judge: 'sub/echo-1' },
  },
  budgets: { daily_usd: 1, auto_switch: { enabled: true, to: 'free/llama-3.3-70b' } },
};
/** A daily budget one paid request exceeds (the demo model costs about $0.00003 a request). */
const tiny = { ...raw, budgets: { daily_usd: 0.000001, auto_switch: { enabled: true, to: 'free/llama-3.3-70b' } } };
const exceeded = { dailyExceeded: () => true };
const within = { dailyExceeded: () => false };

t.test('the step: rewrites only when told the budget is exceeded, the switch is on, and the target is not free already', async (t) => {
  const cfg = testConfig(raw, tempDir(t));
  t.same(autoSwitch(cfg, 'paid/echo-1', exceeded), { model: 'free/llama-3.3-70b', switched: true });
  t.same(autoSwitch(cfg, 'paid/echo-1(high)', exceeded), { model: 'free/llama-3.3-70b', switched: true }, 'a suffixed model too');
  t.same(autoSwitch(cfg, 'paid/echo-1', within), { model: 'paid/echo-1', switched: false }, 'within budget');
  t.same(autoSwitch(cfg, 'free/llama-3.3-70b', exceeded), { model: 'free/llama-3.3-70b', switched: false }, 'already the target');
  t.same(autoSwitch(cfg, 'freebies', exceeded), { model: 'freebies', switched: false }, 'a combo of free members is free');
  t.same(autoSwitch(cfg, 'panel', exceeded), { model: 'free/llama-3.3-70b', switched: true }, 'free members and a paid judge: it spends, switched');
  t.same(autoSwitch(cfg, 'freepanel', exceeded), { model: 'freepanel', switched: false }, 'free members and a subscription judge: free');
  t.same(autoSwitch(cfg, 'sub/echo-1', exceeded), { model: 'sub/echo-1', switched: false }, 'a subscription spends nothing per request: not switched');
  const off = testConfig({ ...raw, budgets: { auto_switch: { enabled: false, to: 'free/llama-3.3-70b' } } }, tempDir(t));
  t.same(autoSwitch(off, 'paid/echo-1', exceeded), { model: 'paid/echo-1', switched: false }, 'switch off');
  const toCombo = testConfig({ ...raw, budgets: { auto_switch: { enabled: true, to: 'freebies' } } }, tempDir(t));
  t.same(autoSwitch(toCombo, 'paid/echo-1', exceeded), { model: 'freebies', switched: true }, 'to a combo');
  const dangling = testConfig({ ...raw, budgets: { auto_switch: { enabled: true, to: 'nowhere/model' } } }, tempDir(t));
  t.same(autoSwitch(dangling, 'paid/echo-1', exceeded), { model: 'paid/echo-1', switched: false }, 'a target that names nothing switches nothing');
  // A name nothing is configured under is the client's mistake: its 404, not the target's answer (before: switched).
  t.same(autoSwitch(cfg, 'nope/gpt-9', exceeded), { model: 'nope/gpt-9', switched: false }, 'an unknown provider is not switched');
  t.same(autoSwitch(cfg, 'paid/no-such-model', exceeded), { model: 'paid/no-such-model', switched: false }, 'an unlisted model of a known provider is not switched');
  t.same(autoSwitch(cfg, 'typo-combo', exceeded), { model: 'typo-combo', switched: false }, 'an unknown combo is not switched');
});

t.test('through the gateway: the free model answers, with the header, the row and the metric marked', async (t) => {
  // The router's budget gate is the real budget engine, given to it at birth: the budget is exceeded by spending it.
  const gw = await startApp(t, tiny);
  const spy = spyFetch();
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: spy.fetch });
  const ask = { model: 'paid/echo-1', messages: [{ role: 'user' as const, content: 'hi' }] };

  await client.chat.completions.create(ask);
  t.equal(spy.last.headers.get('x-tollgate-auto-switched'), null, 'within budget: no switch');
  const before = await rowOf(gw, spy.last.headers.get('x-request-id')!);
  t.same([before.model, before.auto_switched], ['paid/echo-1', false]);

  t.equal(gw.app.tollgate.router.budget, gw.app.tollgate.alerting.budget, 'the gate is the budget engine');
  const state = await gw.app.tollgate.alerting.budget.refresh();
  t.ok(state.daily.spent > state.daily.limit!, `the first request spent the day's budget (${state.daily.spent} USD)`);
  t.equal(gw.app.tollgate.router.budget.dailyExceeded(), true);
  for (const stream of [false, true]) {
    if (stream) for await (const _ of await client.chat.completions.create({ ...ask, stream: true })) void _;
    else await client.chat.completions.create(ask);
    t.equal(spy.last.headers.get('x-tollgate-auto-switched'), 'true', `header (stream ${stream})`);
    t.equal(spy.last.headers.get('x-tollgate-original-model'), 'paid/echo-1');
    const row = await rowOf(gw, spy.last.headers.get('x-request-id')!);
    t.same([row.model, row.provider_group, row.requested_model, row.auto_switched, Number(row.cost)], ['free/llama-3.3-70b', 'free', 'paid/echo-1', true, 0],
      'served by the free model, at no cost, marked auto-switched');
  }
  t.equal(metricValue(await gw.metrics(), 'tollgate_auto_switched_total', {}), 2);

  // Anthropic clients are switched the same way.
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'paid/echo-1', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-tollgate-auto-switched'), 'true');
  t.equal((await rowOf(gw, res.headers.get('x-request-id')!)).model, 'free/llama-3.3-70b');
});
