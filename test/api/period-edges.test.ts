// A request started at exactly today's 00:00:00.000 UTC is today's, not yesterday's: the closed window `yesterday` is
// [from, to) as docs/api.md says, where the reads took it to `to + 1` and billed such a request on both days
// (`/api/usage?period=yesterday` and `/api/usage/combos` against `/api/usage/cost`'s day, which was right).

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { CONFIG, rec } from '../helpers/usage-rows.js';

const gw = await startApp(t, CONFIG as Record<string, unknown>);
const midnight = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000).toISOString();
const yesterday = new Date(Date.parse(midnight) - 86_400_000).toISOString().slice(0, 10);
const C = rec({ at: midnight, kind: 'combo', combo: 'smart', model: 'paid/big', usage: [600, 400], cost: 0.05 });
const A = rec({ at: midnight, kind: 'attempt', combo: 'smart', parent: C.request_id, attempt: 1, model: 'paid/big', usage: [600, 400], cost: 0.05 });
await gw.app.tollgate.store.insert('requests', [C, A], 'period-edges');

const get = async (path: string) => (await (await fetch(`${gw.url}${path}`)).json()) as Record<string, any>;

t.test("a request at midnight is today's only", async (t) => {
  const y = await get('/api/usage?period=yesterday');
  t.match(y.summary, { requests: 0, tokens: 0, cost: 0 }, 'not yesterday');
  const today = await get('/api/usage?period=today');
  t.match(today.summary, { requests: 1, tokens: 1000, cost: 0.05 }, 'today');
  const day = await get(`/api/usage/cost?period=day&date=${yesterday}`);
  t.match(day.totals, { requests: 0, cost: 0 }, "yesterday's cost report agrees");
  const combos = await get('/api/usage/combos?period=yesterday');
  t.notOk((combos.combos as { combo: string; requests: number }[]).some((c) => c.requests > 0), 'no combo request yesterday');
});
