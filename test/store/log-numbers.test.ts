// The request log's numbers (store/log-numbers.ts, dayNumbers): a request's number is its 1-based place among the
// client requests of its UTC day, by start time then request_id. An unfiltered page holds every client request
// between its oldest and newest row, so its numbers are counted from the hourly rollup and the rows before the page,
// not ranked by the engine (`contiguous`); a filtered page ranks. Both are checked against numbers computed here from
// the rows, on every page of the whole listing: rows across an hour, midnight and a month edge, many requests sharing
// one millisecond (so page edges fall inside a tie), attempts and pings that are not numbered, and a batch inserted
// twice. The newest page takes its numbers (on the embedded engine) and its combo requests' attempts in its own read
// (store/logs.ts, readClientPage): checked against the same truth and against attemptsOf, on every page size its first
// read fills, across midnight too.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { dayNumbers } from '../../src/store/log-numbers.js';
import { attemptsOf, clientRequestPage, readClientPage, type CompactRow, type LogCursor, type LogFilters } from '../../src/store/logs.js';
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
    kind, requestId: id, parentId: kind === 'attempt' ? [...made].reverse().find((m) => m.kind === 'combo')?.id ?? '' : '', combo: kind === 'request' ? '' : 'c',
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

t.test('the newest page takes its numbers and attempts in its own read', async (t) => {
  const opts = { full: true, attempts: true, numbers: true } as const;
  const newest = Math.max(...clients.map((m) => m.ts));
  const midnight = Math.floor(newest / DAY) * DAY;
  const firstOfDay = Math.min(...clients.filter((m) => m.ts >= midnight).map((m) => m.ts));
  const entries = (m: Map<string, unknown>) => JSON.stringify([...m].sort(([a], [b]) => (a < b ? -1 : 1)));
  let attempts = 0;
  // The first read reaches five minutes (after a page it did not fill, an hour) before the clock, no upper bound.
  for (const [what, clock] of [['at the newest request', newest + 1], ['just after midnight', firstOfDay + 1]] as const) {
    const inRead = clients.filter((m) => m.ts >= clock - 300_000).length;
    let taken = 0;
    let wrong = 0;
    let attemptsWrong = 0;
    const days = new Set<number>();
    for (let limit = 1; limit <= inRead; limit++) {
      const read = await readClientPage(store, {}, null, limit, clock, opts);
      if ((read.numbers !== null) === !server && read.attempts !== null) taken++;
      for (const r of read.rows) {
        if (!server && read.numbers?.get(r.request_id) !== truth.get(r.request_id)) wrong++;
        days.add(Math.floor(r.ts / DAY));
      }
      const apart = await attemptsOf(store, read.rows.filter((r) => r.kind === 'combo'));
      if (entries(read.attempts ?? new Map()) !== entries(apart)) attemptsWrong++;
      attempts += [...apart.values()].flat().length;
    }
    // On a server the numbers are counted apart (an insert's rollup rows are committed after its rows).
    t.equal(taken, inRead, `${what}: every page its first read fills (${inRead} sizes) takes its attempts${server ? '' : ' and numbers'}`);
    t.equal(wrong, 0, `${what}: every number right`);
    t.equal(attemptsWrong, 0, `${what}: the attempts attemptsOf reads`);
    if (clock === firstOfDay + 1) t.equal(days.size, 2, 'the larger pages cross midnight');
  }
  t.ok(attempts > 0, `pages with attempts (${attempts} over the pages)`);
  const none = { numbers: null, attempts: null };
  const all = await readClientPage(store, {}, null, clients.length + 1, newest + 1, opts);
  t.equal(all.rows.length, clients.length, 'a page longer than the listing: every row');
  t.match(all, none, 'its first read does not fill it: numbers and attempts read apart');
  const last = all.rows[2]!;
  t.match(await readClientPage(store, {}, { ts: last.ts, id: last.request_id }, 2, newest + 1, opts), none, 'a page after a cursor: apart');
  t.match(await readClientPage(store, { to: newest + 1 }, null, 2, newest + 1, opts), none, 'a page with `to`: apart');
  const q = await readClientPage(store, { provider: 'q' }, null, 3, newest + 1, opts);
  t.equal(q.numbers, null, 'a filtered page: its numbers are ranked apart');
  t.equal(entries(q.attempts ?? new Map([['x', 0]])), entries(await attemptsOf(store, q.rows.filter((r) => r.kind === 'combo'))), 'a filtered page: its attempts in its read');
});

// It empties the rollup: the tests before it read numbers, the one after it does not. (On the server path the newest
// page's numbers are counted apart anyway: there this checks only that they are not taken.)
t.test('a rollup that does not hold the page\'s day leaves the numbers to dayNumbers', async (t) => {
  const newest = Math.max(...clients.map((m) => m.ts));
  await store.command(`TRUNCATE TABLE ${store.t('usage_hourly')}`);
  const read = await readClientPage(store, {}, null, 3, newest + 1, { full: false, numbers: true });
  t.equal(read.rows.length, 3);
  t.equal(read.numbers, null, 'no count for the day: not taken');
});

// After the rollup's test: it adds rows. A combo request with more attempts than the newest page's first read has
// room for (readClientPage: two a client row): that read holds no client row, so the span is read again as any other
// and the attempts are left to attemptsOf.
t.test('a combo request with more attempts than the first read has room for', async (t) => {
  const newest = Math.max(...clients.map((m) => m.ts));
  const at = newest + 10_000;
  const combo = row(at, 'combo', 'p');
  const attempts = Array.from({ length: 30 }, (_, i) => row(at + 1 + i, 'attempt', 'p'));
  await store.insert('requests', [combo, ...attempts]);
  for (const limit of [1, 2]) {
    const read = await readClientPage(store, {}, null, limit, at + 60_000, { full: true, attempts: true });
    t.same(read.rows.map((r) => r.request_id), [combo.request_id, [...clients].sort(order).at(-1)!.id].slice(0, limit), `limit ${limit}: the page`);
    t.equal(read.attempts, null, `limit ${limit}: its attempts are read apart`);
  }
  const id = String(combo.request_id);
  const apart = await attemptsOf(store, [{ request_id: id, ts: at, end_ts: at + 150 }]);
  t.same(apart.get(id)?.map((a) => a.request_id), attempts.map((a) => a.request_id), 'all 30, in order');
});
