// Sums of money the gateway adds itself (per model, per provider, per day, read from the store's exact Decimal sums)
// are made exactly: 9876.54 + 0.2 + 0.5 is 9877.24, not 9877.240000000002 as floats add it. Before, /api/usage's summary and
// /api/quota's cost carried such noise while the store's own sums and /api/usage/cost did not (docs/recording.md:
// "sums agree to the cent and beyond across rows, metrics and the API").

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { MoneySum, addMoney, numberUnits } from '../../src/store/decimal.js';

t.test('MoneySum and addMoney: exact for amounts of up to 15 significant digits, NaN kept', async (t) => {
  t.equal(0.1 + 0.2, 0.30000000000000004, 'floats');
  t.equal(addMoney(0.1, 0.2), 0.3);
  t.equal(addMoney(12344.8, 0.5), 12345.3);
  t.equal(MoneySum.of([12344.8, 0.2, 0.3]), 12345.3);
  t.equal(MoneySum.of([3e-7, 1.5e-10, 0.1, 0.2]), 0.30000030015, 'exponent forms read');
  t.equal(numberUnits(-1.25e-10), -125n);
  t.equal(numberUnits(1e21), 10n ** 33n);
  t.ok(Number.isNaN(MoneySum.of([1, NaN])), 'a sum not read stays NaN');
  t.ok(Number.isNaN(addMoney(NaN, 1)));
  let float = 0;
  const exact = new MoneySum();
  for (let i = 0; i < 10_000; i++) {
    float += 0.0000003;
    exact.add(0.0000003);
  }
  t.not(float, 0.003, '10,000 tiny floats drift');
  t.equal(exact.value, 0.003, 'the exact sum does not');
});

t.test('/api/usage and /api/quota add the models\' exact sums exactly', async (t) => {
  const gw = await startApp(t, {
    providers: {
      p: { name: 'p', group: 'paid', format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 1, latency_ms: 0, chunk_delay_ms: 0 }, models: { a: { kind: 'llm' }, b: { kind: 'llm' }, c: { kind: 'llm' } } },
    },
  });
  const store = gw.app.tollgate.store;
  const at = Date.now() - 60_000;
  const insert = (model: string, cost: string) => store.command(`INSERT INTO ${store.t('requests')}
    (request_id, kind, ts, end_ts, endpoint, provider, provider_group, model, requested_model, api_key_name, status, http_status,
     input_tokens, output_tokens, total_tokens, usage_source, cost, list_cost, price_source)
    VALUES (generateUUIDv4(), 'request', fromUnixTimestamp64Milli(${at}), fromUnixTimestamp64Milli(${at}), 'chat.completions', 'p', 'paid',
     '${model}', '${model}', 'k', 'success', 200, 1, 0, 1, 'reported', toDecimal64('${cost}', 12), toDecimal64('${cost}', 12), 'config')`);
  await insert('p/a', '9876.54');
  await insert('p/b', '0.2');
  await insert('p/c', '0.5');
  const [stored] = await store.query<{ c: string }>(`SELECT toString(sum(cost)) AS c FROM ${store.t('requests')} FINAL`);
  t.equal(stored!.c, '9877.24');
  const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as { summary: { cost: number } };
  t.equal(usage.summary.cost, 9877.24, "/api/usage's summary (floats: 9877.240000000002)");
  // The snapshot is kept up to a second: read until it holds the rows inserted above.
  let cost: { today: number; month: number } | undefined;
  await waitFor(async () => {
    const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; cost: { today: number; month: number } }[] };
    cost = quota.providers.find((p) => p.id === 'p')?.cost;
    return (cost?.today ?? 0) > 9_000;
  }, 10_000);
  t.match(cost, { today: 9877.24, month: 9877.24 }, "/api/quota's cost");
});
