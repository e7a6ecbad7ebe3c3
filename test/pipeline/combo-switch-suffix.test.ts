// A thinking suffix on the auto-switch's target naming a combo (`to: fb(high)`) reached no member: the route computed
// it and did not pass it on to the combo (review s12e). Its own file: one embedded store a process.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { waitFor } from '../helpers/wait.js';

const fakes = { a: await startFakeOpenAI(t), b: await startFakeOpenAI(t), p: await startFakeOpenAI(t) };
const provider = (id: keyof typeof fakes) =>
  fakeProvider(fakes[id].baseUrl, { name: `Fake ${id}`, price: { input: 1, output: 2, cached: 0.5 }, models: { m: { kind: 'llm', capabilities: ['reasoning'] } } });
const msgs = [{ role: 'user', content: 'hi' }];
const effortSeenBy = (f: keyof typeof fakes) => fakes[f].received.at(-1)?.body.reasoning_effort;

t.test('an auto-switch target naming a combo with a suffix: the suffix reaches the member', async (t) => {
  const sw = await startApp(t, {
    providers: { a: provider('a'), b: provider('b'), p: provider('p') },
    budgets: { daily_usd: 0.000001, auto_switch: { enabled: true, to: 'fb(high)' } },
    combos: { fb: { strategy: 'fallback', models: ['a/m', 'b/m'] } },
  });
  const chat = () => fetch(`${sw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'p/m', messages: msgs }) });
  await (await chat()).text(); // spends past the 1e-6 USD daily budget
  await waitFor(() => sw.app.tollgate.alerting.budget.dailyExceeded());
  const before = fakes.a.received.length;
  const s = await chat();
  await s.text();
  t.equal(s.headers.get('x-tollgate-auto-switched'), 'true', 'switched');
  t.equal(fakes.a.received.length, before + 1, "served by fb's first member");
  t.equal(effortSeenBy('a'), 'high', "the target's (high) reaches the member");
});
