// The budget's spend of a window is the store's figure plus the calls not stored yet, summed exactly (one MoneySum):
// added as two floats, a day's spend read one unit of 10^-12 USD apart before and after the writer stored its last call
// (a review of the exact-sum change reproduced 4110.885998000013 against 4110.885998000014).
import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';

const PRICE = 9999;
const gw = await startApp(t, {
  providers: { demo: { ...DEMO_PROVIDER, price: { input: PRICE, output: PRICE, cached: 0 } } },
  budgets: { daily_usd: 100000 },
  storage: { batch: { flush_ms: 600000 } },
});

t.test('the stored spend and an unstored call add exactly, before and after the call is stored', async (t) => {
  // One call through the gateway: its row waits (flush_ms 10 minutes).
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 }),
  });
  t.equal(res.status, 200);
  const { usage } = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  const units = (x: string): bigint => BigInt(x.replace('.', ''));
  const call = ((usage.prompt_tokens + usage.completion_tokens) * PRICE) / 1e6;
  // A stored figure whose float sum with the call is off by a unit: searched, so the test does not hang on one pair.
  let stored = 0;
  let exact = '';
  for (let i = 1; i < 100_000; i++) {
    const s = (4000 + ((i * 7919) % 1000003) / 1000 + i / 1e12).toFixed(12);
    const e = (units(s) + units(call.toFixed(12))).toString();
    const exactNumber = Number(`${e.slice(0, -12)}.${e.slice(-12)}`);
    if (exactNumber !== Number((Number(s) + call).toFixed(12))) {
      stored = Number(s);
      exact = `${e.slice(0, -12)}.${e.slice(-12)}`;
      break;
    }
  }
  t.not(exact, '', 'a pair whose float sum is not the exact one');
  const now = Date.now();
  await gw.app.tollgate.store.insert('requests', [toRow(makeRecord({
    kind: 'request', requestId: uuidv7(now - 1000), startedAt: now - 1000, endedAt: now - 900, endpoint: 'chat.completions', provider: 'demo',
    providerGroup: 'paid', model: 'demo/echo-1', requestedModel: 'echo-1', modelKnown: true, apiKeyName: 'k', stream: false,
    status: 'success', httpStatus: 200, errorType: '', usage: { input: 1, cached: null, cacheWrite: null, output: 0, reasoning: null },
    usageSource: 'reported', cost: { cost: stored, listCost: stored }, latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
  }))]);
  const spent = async (): Promise<number> => ((await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { spent: number } }).daily.spent;
  t.equal(await spent(), Number(exact), 'the call not stored yet: the exact sum');
  await gw.flush();
  t.equal(await spent(), Number(exact), 'the call stored: the same figure');
});
