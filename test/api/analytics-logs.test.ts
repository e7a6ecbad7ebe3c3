// The request log (/api/usage/logs and /api/usage/request-logs) over the known rows of test/helpers/usage-rows.ts: records,
// request numbers, filters, keyset pagination across pages (no duplicate, no gap, ties on one timestamp, rows inserted
// between pages), format=text; and every 400 of every analytics route.

import Fastify from 'fastify';
import t from 'tap';
import { logRoutes } from '../../src/api/analytics/logs.js';
import { IDS, ROWS, clientOrder, rec, startFixture, type RowName } from '../helpers/usage-rows.js';
import { countReads } from '../helpers/store-reads.js';

const fx = await startFixture(t);
const idOf = (k: RowName): string => ROWS[k].request_id;
const names = new Map((Object.keys(ROWS) as RowName[]).map((k) => [idOf(k), k]));
const nameOf = (id: string): string => names.get(id) ?? id;

interface Entry { request_id: string; number: number; [k: string]: unknown }

async function all(path: string, limit: number): Promise<{ pages: number; entries: Entry[] }> {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await fx.get(`${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
    entries.push(...r.json.data);
    cursor = r.json.next_cursor;
    pages++;
  } while (cursor !== null && pages < 100);
  return { pages, entries };
}

t.test('logs: the compact record per client request, newest first; attempts and pings are not listed', async (t) => {
  const r = await fx.get('/fixed/api/usage/logs?limit=500');
  t.equal(r.status, 200);
  t.equal(r.json.limit, 500);
  t.equal(r.json.next_cursor, null);
  t.same(r.json.filters, {});
  t.same(r.json.data.map((e: Entry) => nameOf(e.request_id)), clientOrder(), 'X1, inserted twice, is listed once');
  t.equal(r.json.data.length, 19);

  const byName = (k: RowName) => r.json.data.find((e: Entry) => e.request_id === idOf(k));
  t.same(byName('R1'), {
    number: 5, request_id: idOf('R1'), model: 'paid/big', requested_model: 'paid/big', provider: 'paid', combo: null,
    timestamp: '2026-12-01T10:00:00.000Z', input_tokens: 1000, output_tokens: 400, total_tokens: 1600, cached_tokens: 200,
    cost: 0.01, duration_s: 2, status: 'success', detail_status: 'success', http_status: 200, stream: true,
  });
  t.same(byName('R5'), {
    number: 2, request_id: idOf('R5'), model: 'paid/big', requested_model: 'paid/big', provider: 'paid', combo: null,
    timestamp: '2026-12-01T08:00:00.000Z', input_tokens: 50, output_tokens: 10, total_tokens: 60, cached_tokens: null,
    cost: 0.00006, duration_s: 0.3, status: 'failure', detail_status: 'aborted', http_status: 499, stream: false,
  });
  t.match(byName('R3'), { number: 1, input_tokens: null, output_tokens: null, cached_tokens: null, total_tokens: 0, status: 'failure', detail_status: 'failure', http_status: 502 });
  t.match(byName('C1'), { number: 4, requested_model: 'smart', combo: 'smart', model: 'sub/m1', total_tokens: 500, duration_s: 1.8 });
  // Numbers run per UTC day in start order: 12-01 has R3 R5 R2 C1 R1 C2 C3; 11-30 has R4 alone.
  t.same(['R3', 'R5', 'R2', 'C1', 'R1', 'C2', 'C3', 'R4'].map((k) => byName(k as RowName).number), [1, 2, 3, 4, 5, 6, 7, 1]);
  const ties = ['X1', 'T1', 'T2'].map((k) => byName(k as RowName)).sort((a, b) => (a.request_id < b.request_id ? -1 : 1));
  t.same(ties.map((e) => e.number), [1, 2, 3], 'one timestamp: numbered by request_id');
});

t.test('logs: filters keep each request its number', async (t) => {
  const paid = (await fx.get('/fixed/api/usage/logs?provider=paid&from=2026-12-01')).json;
  t.same(paid.data.map((e: Entry) => [nameOf(e.request_id), e.number]), [['C2', 6], ['R1', 5], ['R5', 2]]);
  t.same(paid.filters, { provider: 'paid', from: '2026-12-01' });
  const failed = (await fx.get('/fixed/api/usage/logs?status=failure')).json;
  t.same(failed.data.map((e: Entry) => nameOf(e.request_id)), ['C3', 'R5', 'R3'], 'aborted counts as a failure');
  const aborted = (await fx.get('/fixed/api/usage/logs?status=aborted')).json;
  t.same(aborted.data.map((e: Entry) => nameOf(e.request_id)), ['R5']);
  const ok = (await fx.get('/fixed/api/usage/logs?status=success&limit=500')).json;
  t.equal(ok.data.length, 16);
  // from is inclusive (R5 at 08:00Z = 09:00+01:00), to exclusive (R1 at 10:00:00.000Z).
  const window = (await fx.get('/fixed/api/usage/logs?from=2026-12-01T09:00:00%2B01:00&to=2026-12-01T10:00:00Z')).json;
  t.same(window.data.map((e: Entry) => nameOf(e.request_id)), ['C1', 'R2', 'R5']);
  const edge = (await fx.get('/fixed/api/usage/logs?from=2026-11-30T23:59:59.999Z&to=2026-12-01T00:00:00.001Z')).json;
  t.same(edge.data.map((e: Entry) => nameOf(e.request_id)), ['R3', 'R4'], 'the day edge: both sides');
  const carol = (await fx.get('/fixed/api/usage/logs?api_key=carol&combo=smart')).json;
  t.same(carol.data.map((e: Entry) => nameOf(e.request_id)), ['C3', 'C1']);
  const model = (await fx.get('/fixed/api/usage/logs?model=free%2Fllama')).json;
  t.same(model.data.map((e: Entry) => nameOf(e.request_id)), ['R3', 'R7']);
  const old = (await fx.get('/fixed/api/usage/logs?to=2025-06-02')).json;
  t.same(old.data.map((e: Entry) => nameOf(e.request_id)).sort(), ['T1', 'T2', 'X1'], 'a window reached only by reading further back');
});

t.test('request-logs: the full record, with a combo request\'s attempts nested', async (t) => {
  const r = await fx.get('/fixed/api/usage/request-logs?combo=fuse');
  t.equal(r.status, 200);
  t.equal(r.json.data.length, 1);
  const c2 = r.json.data[0];
  t.match(c2, {
    number: 6, request_id: IDS.C2, kind: 'combo', combo: 'fuse', model: 'paid/big', provider: 'paid', provider_group: 'paid',
    total_tokens: 850, cost: 0.0023, list_cost: 0.0023, api_key_name: 'carol', endpoint: 'chat.completions', error_type: null,
    end_timestamp: '2026-12-01T10:10:03.000Z', usage: { input: 600, cached: null, cache_write: null, output: 250, reasoning: null, source: 'reported' },
    duration_s: 3, upstream_s: 2.99, ttft_s: null,
  });
  t.same(c2.attempts.map((a: { attempt: number; model: string; total_tokens: number; cost: number; status: string }) => [a.attempt, a.model, a.total_tokens, a.cost, a.status]), [
    [1, 'paid/small', 200, 0.0003, 'success'], [2, 'free/llama', 150, 0, 'success'], [3, 'paid/big', 500, 0.002, 'success'],
  ]);
  t.equal(c2.attempts.reduce((s: number, a: { total_tokens: number }) => s + a.total_tokens, 0), c2.total_tokens, 'the combo row sums its attempts');

  const smart = (await fx.get('/fixed/api/usage/request-logs?combo=smart')).json.data;
  t.same(smart.map((e: { attempts: { http_status: number; detail_status: string }[] }) => e.attempts.map((a) => [a.http_status, a.detail_status])), [
    [[429, 'failure'], [500, 'failure']], [[500, 'failure'], [200, 'success']],
  ]);
  const r1 = (await fx.get('/fixed/api/usage/request-logs?from=2026-12-01T10:00:00Z&to=2026-12-01T10:00:01Z')).json.data[0];
  t.match(r1, { request_id: idOf('R1'), kind: 'request', attempts: [], ttft_s: 0.25, usage: { input: 1000, cached: 200, output: 300, reasoning: 100 } });
});

// The newest page (no cursor, no `to`) takes its numbers and its combo requests' attempts in its own read when that
// read fills it (store/logs.ts, readClientPage); any other page reads them apart. On a clock just after R1 the newest
// page's first read (the last five minutes or the last hour, and everything after) holds C1, R1, C2 and C3.
t.test('the newest page: one read for its rows, numbers and attempts, the entries three reads give', async (t) => {
  const recent = Fastify({ logger: false });
  await recent.register(logRoutes, { store: fx.app.tollgate.store, now: () => Date.parse('2026-12-01T10:00:00.001Z') });
  t.teardown(() => recent.close());
  const reads = countReads(t, fx.app.tollgate.store);
  const get = async (path: string) => {
    reads.reset();
    const r = await recent.inject(path);
    if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${r.body}`);
    return { reads: reads.count, data: r.json().data as Entry[] };
  };
  for (const [path, apartReads] of [['/api/usage/request-logs', 3], ['/api/usage/logs', 2]] as const) {
    const one = await get(`${path}?limit=3`);
    const apart = await get(`${path}?limit=3&to=2026-12-01T11:00:00Z`); // with `to`: not the newest page
    t.equal(one.reads, 1, `${path}: the newest page is one read`);
    // (the page itself may take two reads there: the span before `to` first)
    t.ok(apart.reads >= apartReads, `${path}: a page with an upper bound reads its numbers (and attempts) apart (${apart.reads} reads)`);
    t.same(one.data.map((e) => nameOf(e.request_id)), ['C3', 'C2', 'R1']);
    t.same(one.data.map((e) => e.number), [7, 6, 5], 'the day\'s count less the rows above');
    t.same(one.data, apart.data, `${path}: the same entries either way`);
  }
  const { data } = await get('/api/usage/request-logs?limit=3');
  const attempts = data.map((e) => (e.attempts as { attempt: number; request_id: string }[]).map((a) => [a.attempt, nameOf(a.request_id)]));
  t.same(attempts, [[[1, 'A3'], [2, 'A4']], [[1, 'B1'], [2, 'B2'], [3, 'B3']], []], 'each combo request\'s attempts, in order');
  const last = await get('/api/usage/request-logs?limit=2');
  t.same(last.data.map((e) => [nameOf(e.request_id), (e.attempts as unknown[]).length]), [['C3', 2], ['C2', 3]], 'the oldest row\'s attempts too');
  t.equal(last.reads, 1);
});

t.test('pagination: every page size walks the same list, with no duplicate or gap', async (t) => {
  const want = clientOrder();
  for (const limit of [1, 5, 6, 19, 20]) {
    for (const path of ['/fixed/api/usage/logs', '/fixed/api/usage/request-logs']) {
      const { pages, entries } = await all(path, limit);
      t.same(entries.map((e) => nameOf(e.request_id)), want, `${path} limit=${limit}`);
      t.equal(pages, Math.ceil(want.length / limit), 'one row more is read than shown, so no empty page is ever needed');
    }
  }
  const full = await fx.get('/fixed/api/usage/logs?limit=19');
  t.equal(full.json.next_cursor, null, 'a page that holds exactly the rest ends the list');
  const more = await fx.get('/fixed/api/usage/logs?limit=18');
  const after = await fx.get(`/fixed/api/usage/logs?limit=18&cursor=${more.json.next_cursor}`);
  t.same([after.json.data.length, after.json.next_cursor], [1, null]);
});

t.test('pagination is stable while rows are inserted: new rows never shift a later page', async (t) => {
  const p1 = (await fx.get('/fixed/api/usage/logs?limit=4')).json;
  t.same(p1.data.map((e: Entry) => nameOf(e.request_id)), ['C3', 'C2', 'R1', 'C1']);
  // A request recorded between two pages: newer than every listed row.
  const late = rec({ at: '2026-12-01T10:25:00Z', model: 'paid/big', usage: [1, 1], cost: 0.000001 });
  await fx.app.tollgate.store.insert('requests', [late]);
  const p2 = (await fx.get(`/fixed/api/usage/logs?limit=4&cursor=${p1.next_cursor}`)).json;
  t.same(p2.data.map((e: Entry) => nameOf(e.request_id)), ['R2', 'R5', 'R3', 'R4'], 'page 2 continues where page 1 ended');
  t.same(p2.data.map((e: Entry) => e.number), [3, 2, 1, 1], 'the numbers of earlier requests do not move');
  const top = (await fx.get('/fixed/api/usage/logs?limit=1')).json.data[0];
  t.same([top.request_id, top.number], [late.request_id, 8], 'the new request is first, numbered after the day\'s others');
});

t.test('format=text: one line per request (request-logs: plus its attempts), the next cursor in a header', async (t) => {
  const r = await fx.get('/fixed/api/usage/logs?limit=3&format=text');
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^text\/plain/);
  const lines = r.text.trimEnd().split('\n');
  t.equal(lines.length, 3);
  t.equal(lines[0], `#8 2026-12-01T10:25:00.000Z success 200 paid/big in=1 out=1 cached=- total=2 cost=0.000001 0.1s unary id=${lines[0]!.split('id=')[1]}`);
  t.equal(lines[1], `#7 2026-12-01T10:20:00.000Z failure 500 sub/m1 combo=smart in=- out=- cached=- total=0 cost=0 0.4s unary id=${IDS.C3}`);
  t.ok(r.headers['x-next-cursor'], 'more pages follow');

  const full = await fx.get('/fixed/api/usage/request-logs?format=text&combo=smart');
  const fl = full.text.trimEnd().split('\n');
  t.equal(fl.length, 6, 'C3 and its two attempts, C1 and its two attempts');
  t.match(fl[0], /^#7 .* combo=smart /);
  t.match(fl[1], /^ {2}attempt 1 2026-12-01T10:20:00\.010Z failure 429 paid\/big .* error=upstream_error id=/);
  t.match(fl[5], /^ {2}attempt 2 2026-12-01T09:59:00\.200Z success 200 sub\/m1 in=300 out=200 cached=- total=500 cost=0 1\.5s id=/);
  t.equal(full.headers['x-next-cursor'], undefined, 'no header on the last page');

  const aborted = await fx.get('/fixed/api/usage/logs?format=text&status=aborted');
  t.match(aborted.text, /^#2 2026-12-01T08:00:00\.000Z failure\(aborted\) 499 paid\/big /);
  const none = await fx.get('/fixed/api/usage/logs?format=text&provider=nobody');
  t.equal(none.text, '');
});

t.test('every bad query parameter is a 400 that names it', async (t) => {
  const cases: [string, string, string][] = [
    ['/api/usage?period=fortnight', 'TOLLGATE_ERR_INVALID_PERIOD', 'period'],
    ['/api/usage?provder=paid', 'TOLLGATE_ERR_INVALID_QUERY', 'provder'],
    ['/api/usage?provider=a&provider=b', 'TOLLGATE_ERR_INVALID_QUERY', 'provider'],
    ['/api/usage?include_keepalive=yes', 'TOLLGATE_ERR_INVALID_QUERY', 'include_keepalive'],
    [`/api/usage?model=${'x'.repeat(257)}`, 'TOLLGATE_ERR_INVALID_QUERY', 'model'],
    ['/api/usage/logs?limit=0', 'TOLLGATE_ERR_INVALID_QUERY', 'limit'],
    ['/api/usage/logs?limit=501', 'TOLLGATE_ERR_INVALID_QUERY', 'limit'],
    ['/api/usage/logs?limit=ten', 'TOLLGATE_ERR_INVALID_QUERY', 'limit'],
    ['/api/usage/logs?limit=1.5', 'TOLLGATE_ERR_INVALID_QUERY', 'limit'],
    ['/api/usage/logs?cursor=not-a-cursor!', 'TOLLGATE_ERR_INVALID_QUERY', 'cursor'],
    [`/api/usage/logs?cursor=${Buffer.from('12:nope').toString('base64url')}`, 'TOLLGATE_ERR_INVALID_QUERY', 'cursor'],
    ['/api/usage/logs?status=ok', 'TOLLGATE_ERR_INVALID_QUERY', 'status'],
    ['/api/usage/logs?from=2026-13-01', 'TOLLGATE_ERR_INVALID_QUERY', 'from'],
    ['/api/usage/logs?from=2026-02-30', 'TOLLGATE_ERR_INVALID_QUERY', 'from'],
    ['/api/usage/logs?to=yesterday', 'TOLLGATE_ERR_INVALID_QUERY', 'to'],
    ['/api/usage/logs?to=2026-12-01T10:00:00', 'TOLLGATE_ERR_INVALID_QUERY', 'to'],
    ['/api/usage/logs?from=2026-12-02&to=2026-12-01', 'TOLLGATE_ERR_INVALID_QUERY', 'to'],
    ['/api/usage/logs?format=csv', 'TOLLGATE_ERR_INVALID_QUERY', 'format'],
    ['/api/usage/request-logs?period=today', 'TOLLGATE_ERR_INVALID_QUERY', 'period'],
    ['/api/usage/request-logs?limit=-1', 'TOLLGATE_ERR_INVALID_QUERY', 'limit'],
    ['/api/usage/cost?period=week', 'TOLLGATE_ERR_INVALID_PERIOD', 'period'],
    ['/api/usage/cost?date=2026-11', 'TOLLGATE_ERR_INVALID_QUERY', 'date'],
    ['/api/usage/cost?period=month&date=2026-11-01', 'TOLLGATE_ERR_INVALID_QUERY', 'date'],
    ['/api/usage/cost?period=month&date=2026-13', 'TOLLGATE_ERR_INVALID_QUERY', 'date'],
    ['/api/usage/cost?provider=paid', 'TOLLGATE_ERR_INVALID_QUERY', 'provider'],
    ['/api/usage/projection?days=14', 'TOLLGATE_ERR_INVALID_QUERY', 'days'],
    ['/api/usage/projection?include_keepalive=1', 'TOLLGATE_ERR_INVALID_QUERY', 'include_keepalive'],
    ['/api/usage/combos?period=decade', 'TOLLGATE_ERR_INVALID_PERIOD', 'period'],
    ['/api/usage/combos?combo=a&combo=b', 'TOLLGATE_ERR_INVALID_QUERY', 'combo'],
    ['/api/usage/hourly?tz=Mars/Olympus_Mons', 'TOLLGATE_ERR_INVALID_QUERY', 'tz'],
    ['/api/usage/hourly?tz=Europe/Paris%20OR%201', 'TOLLGATE_ERR_INVALID_QUERY', 'tz'],
    ['/api/usage/hourly?date=2026-12-32', 'TOLLGATE_ERR_INVALID_QUERY', 'date'],
    ['/api/usage/hourly?date=1969-12-31', 'TOLLGATE_ERR_INVALID_QUERY', 'date'],
    ['/api/usage/overview?period=today', 'TOLLGATE_ERR_INVALID_QUERY', 'period'],
  ];
  for (const [path, code, param] of cases) {
    for (const prefix of ['/fixed', '']) {
      const r = await fx.get(`${prefix}${path}`);
      t.equal(r.status, 400, `${prefix}${path} is a 400`);
      t.same(
        { code: r.json?.error?.code, param: r.json?.error?.param, type: r.json?.error?.type, request_id: r.json?.error?.request_id },
        { code, param, type: 'invalid_request_error', request_id: null },
        `${prefix}${path}: ${r.json?.error?.message}`,
      );
    }
  }
});

// Last: it inserts a row again. The attempts are read with LIMIT 1 BY request_id (not FINAL): an attempt inserted in
// two batches (a retried insert that the deduplication token did not cover) is still listed once.
t.test('request-logs: an attempt inserted twice is listed once', async (t) => {
  await fx.app.tollgate.store.insert('requests', [ROWS.B2]);
  const [c2] = (await fx.get('/fixed/api/usage/request-logs?combo=fuse')).json.data;
  t.same(c2.attempts.map((a: { attempt: number }) => a.attempt), [1, 2, 3], 'attempt 2 once');
  const raw = await fx.app.tollgate.store.query<{ n: string }>(`SELECT count() AS n FROM ${fx.app.tollgate.store.t('requests')} WHERE request_id = {id:UUID}`, { id: ROWS.B2.request_id });
  t.equal(Number(raw[0]!.n), 2, 'the row is in the raw table twice (no merge yet)');
});
