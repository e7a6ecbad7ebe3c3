// settleLanded's read of `requests` (store/rollup-repair.ts): the question "are a leftover segment's rows all in the
// table?" is asked within the rows' own start times (startSpan of the segment's lines), so it reads the parts and
// hours they can be in and not the whole table. The replay after a kill, end to end, is in replay-*.test.ts.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { settleLanded, startSpan } from '../../src/store/rollup-repair.js';
import { REQUEST_COLUMNS } from '../../src/store/rows.js';
import { rowLine } from '../../src/store/segment.js';
import { openTestStore } from '../helpers/store-paths.js';
import { rec } from '../helpers/usage-rows.js';

t.test('startSpan: the earliest and latest ts of the rows, as arrays in their columns or as objects; null when one has none', async (t) => {
  const rows = [{ ts: 5_000, request_id: 'a' }, { ts: 1_000, request_id: 'b' }, { ts: 9_000, request_id: 'c' }];
  const columns = ['request_id', 'ts'];
  const arrays = (rs: Record<string, unknown>[]) => ({ columns, lines: rs.map((r) => rowLine(columns, r)) });
  const objects = (rs: Record<string, unknown>[]) => ({ columns: null, lines: rs.map((r) => JSON.stringify(r)) });
  for (const [form, of] of [['arrays', arrays], ['objects (an earlier version\'s)', objects]] as const) {
    t.same(startSpan(of(rows)), { lo: 1_000, hi: 9_000 }, form);
    t.same(startSpan(of([{ ts: 7 }])), { lo: 7, hi: 7 }, `${form}: one line`);
    t.equal(startSpan(of([])), null, `${form}: no lines`);
    t.equal(startSpan(of([...rows, { request_id: 'd' }])), null, `${form}: a line without ts: no bound`);
    t.equal(startSpan(of([...rows, { ts: '2026-11-20 09:00:00' }])), null, `${form}: a ts that is not epoch ms: no bound`);
    t.equal(startSpan({ ...of(rows), lines: [...of(rows).lines, '{"ts": 1'] }), null, `${form}: a line that is not JSON: no bound`);
  }
  t.equal(startSpan({ columns: ['request_id'], lines: arrays(rows).lines }), null, 'arrays of another length than the columns: no bound');
});

t.test('settleLanded looks for the rows within their start times', async (t) => {
  const store = await openTestStore(t, { database: 'settle', prefix: 'tollgate-settle-' });
  await migrate(store);
  const rows = [0, 1, 2].map((i) => rec({ at: new Date(Date.UTC(2026, 10, 20, 9) + i * 60_000).toISOString(), model: 'paid/m', key: 'settle', usage: [3, 2] }));
  await store.insert('requests', rows);
  const ids = rows.map((r) => r.request_id);
  const span = startSpan({ columns: REQUEST_COLUMNS, lines: rows.map((r) => rowLine(REQUEST_COLUMNS, r)) });
  t.same(span, { lo: Date.UTC(2026, 10, 20, 9), hi: Date.UTC(2026, 10, 20, 9, 2) }, 'the span of the rows as spooled');

  t.equal(await settleLanded(store, ids, span), true, 'every row is found within its span: settled');
  // The same ids said to start a day later: a read bounded by the span does not find them (an unbounded one would).
  const later = { lo: span!.lo + 86_400_000, hi: span!.hi + 86_400_000 };
  t.equal(await settleLanded(store, ids, later), false, 'not found outside the span: the read is bounded by it');
  t.equal(await settleLanded(store, ids, null), true, 'no span: the whole table is read, and they are found');
  t.equal(await settleLanded(store, [...ids, '00000000-0000-7000-8000-000000000000'], span), false, 'one row missing: not settled');

  // Settling made the rollups whole and changed nothing that was whole already: each row counted once.
  const [c] = await store.query<{ hourly: string; daily: string }>(
    `SELECT (SELECT sum(rows) FROM ${store.t('usage_hourly')} WHERE api_key_name = 'settle') AS hourly,
            (SELECT sum(rows) FROM ${store.t('usage_daily')} WHERE api_key_name = 'settle') AS daily`,
  );
  t.same([Number(c!.hourly), Number(c!.daily)], [3, 3], 'the rollups count each row once');
});
