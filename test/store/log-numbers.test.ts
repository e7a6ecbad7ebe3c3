// The request log's numbers (store/logs.ts, dayNumbers): a request's number is its 1-based place among the client
// requests of its UTC day, by start time then request_id. An unfiltered page holds every client request between its
// oldest and newest row, so its numbers are counted from the hourly rollup and the rows before the page, not ranked by
// the engine (`contiguous`); a filtered page ranks. Both are checked against numbers computed here from the rows,
// on every page of the whole listing: rows across an hour, midnight and a month edge, many requests sharing one
// millisecond (so page edges fall inside a tie), attempts and pings that are not numbered, and a batch inserted twice.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { clientRequestPage, dayNumbers, type CompactRow, type LogCursor, type LogFilters } from '../../src/store/logs.js';
import { openTestStore, storePath } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'lognumbers', prefix: 'tollgate-lognumbers-' });
await migrate(store);

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 31, 22, 40); // 2026-03-31 22:40Z: the rows run past an hour, midnight and a month edge
const PROVIDERS = ['p', 'q'];

interface Made { id: string; ts: number; kind: RecordKind; provider: string }
const made: Made[] = [];
function row(ts: number, kind: RecordKind, provider: string) {
  const id = uuidv7(ts);
  made.push({ id, ts, kind, provider });
  return toRow(makeRecord({
    kind, requestId: id, parentId: kind === 'attempt' ? made.find((m) => m.kind === 'combo')?.id ?? '' : '', combo: kind === 'request' ? '' : 'c',
    startedAt: ts, endedAt: ts + 50, endpoint: 'chat.completions', provider, providerGroup: 'paid', model: `${provider}/m`, requestedModel: 'm',
    modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 6, cached: null, cacheWrite: null, output: 4, reasoning: null }, usageSource: 'reported', cost: { cost: 0.001, listCost: 0.001 },
    latency: { kind: 'unary', totalMs: 50 }, upstreamMs: 40,
  }));
}

// Deterministic, varied: every 7th start time is shared by three requests (ties), every 5th row is a combo with an
// attempt, every 11th a ping; gaps of 0.5-90 s carry the rows over midnight.
const batches: ReturnType<typeof row>[][] = [];
let ts = T0;
for (let b = 0; b < 4; b++) {
  const batch: ReturnType<typeof row>[] = [];
  for (let i = 0; i < 40; i++) {
    const n = b * 40 + i;
    ts += 500 + ((n * 7919) % 90_000);
    const provider = PROVIDERS[n % 2]!;
    const kind: RecordKind = n % 5 === 0 ? 'combo' : 'request';
    batch.push(row(ts, kind, provider));
    if (n % 7 === 0) batch.push(row(ts, 'request', PROVIDERS[(n + 1) % 2]!), row(ts, 'request', provider));
    if (kind === 'combo') batch.push(row(ts + 1, 'attempt', provider));
    if (n % 11 === 0) batch.push(row(ts + 2, 'keepalive', provider));
  }
  batches.push(batch);
}
for (const batch of batches) await store.insert('requests', batch);
await store.insert('requests', batches[2]!); // a retried batch: the same rows again

const clients = made.filter((m) => m.kind === 'request' || m.kind === 'combo');
const order = (a: Made, b: Made) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const truth = new Map<string, number>();
for (const m of [...clients].sort(order)) {
  const day = Math.floor(m.ts / DAY);
  truth.set(m.id, clients.filter((o) => Math.floor(o.ts / DAY) === day && order(o, m) < 0).length + 1);
}
const anchor = ts + 3_600_000;

/** Every page of the newest-first listing, as the API reads them (one row more than `limit`, then cut). */
async function pages(filters: LogFilters, limit: number) {
  const out: { id: string; ts: number }[][] = [];
  let cursor: LogCursor | null = null;
  for (;;) {
    const got: CompactRow[] = await clientRequestPage(store, filters, cursor, limit + 1, anchor, false);
    const page = got.slice(0, limit).map((r) => ({ id: r.request_id, ts: r.ts }));
    if (page.length > 0) out.push(page);
    if (got.length <= limit) return out;
    const last = page[page.length - 1]!;
    cursor = { ts: last.ts, id: last.id };
  }
}

t.test('the data has what the check needs', async (t) => {
  const days = new Set(clients.map((m) => Math.floor(m.ts / DAY)));
  t.equal(days.size, 2, 'client requests on two UTC days');
  const shared = new Map<number, number>();
  for (const m of clients) shared.set(m.ts, (shared.get(m.ts) ?? 0) + 1);
  t.ok([...shared.values()].some((n) => n >= 3), 'requests that share a millisecond');
  t.ok(made.some((m) => m.kind === 'attempt') && made.some((m) => m.kind === 'keepalive'), 'attempts and pings, which are not numbered');
});

// The server path (log-numbers.server.test.ts) runs fewer pages: each read there is an HTTP round trip to the engine.
const server = storePath() === 'server';
for (const limit of server ? [60] : [9, 60, 1000]) {
  t.test(`unfiltered pages of ${limit}: counted numbers are the day's places`, async (t) => {
    const all = await pages({}, limit);
    const ids = all.flat().map((r) => r.id);
    t.equal(ids.length, clients.length, 'every client request listed');
    t.equal(new Set(ids).size, ids.length, 'each once');
    let wrong = 0;
    let ranked = 0;
    for (const page of all) {
      const rows = page.map((r) => ({ request_id: r.id, ts: r.ts }));
      const counted = await dayNumbers(store, rows, { contiguous: true });
      const byRank = await dayNumbers(store, rows);
      for (const r of rows) {
        if (counted.get(r.request_id) !== truth.get(r.request_id)) wrong++;
        if (byRank.get(r.request_id) !== truth.get(r.request_id)) ranked++;
      }
    }
    t.equal(wrong, 0, `counted: every number right (${ids.length} rows, ${all.length} pages)`);
    t.equal(ranked, 0, 'ranked: the same numbers');
  });
}

t.test('a filtered page is ranked: the numbers are the unfiltered ones', async (t) => {
  const all = await pages({ provider: 'q' }, server ? 30 : 9);
  const rows = all.flat();
  t.equal(rows.length, clients.filter((m) => m.provider === 'q').length, 'every request of q listed');
  let wrong = 0;
  for (const page of all) {
    const got = await dayNumbers(store, page.map((r) => ({ request_id: r.id, ts: r.ts })));
    for (const r of page) if (got.get(r.id) !== truth.get(r.id)) wrong++;
  }
  t.equal(wrong, 0, 'every number right');
  // The counted form assumes a page holds every request between its ends: on a filtered page it would not.
  const page = all[1]!.map((r) => ({ request_id: r.id, ts: r.ts }));
  const counted = await dayNumbers(store, page, { contiguous: true });
  t.ok(page.some((r) => counted.get(r.request_id) !== truth.get(r.request_id)), 'counting a filtered page would be wrong (why it ranks)');
});
