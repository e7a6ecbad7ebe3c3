// Routing before the first evaluation after a start (src/routing/start-hold.ts): a gateway started on a spool whose
// leftover rows already exceed the daily budget sends its first paid request to the auto-switch's free target (before,
// it went to the paid provider: the budget's figures were not known until the leftovers were read and the store open),
// while a request whose routing reads no such figure is answered at once, during the reading. A client that leaves
// while held leaves the row of a client gone before its upstream call, and nothing goes upstream. Past the bound (the
// store down at start), requests are routed on what is known. Embedded store, real files, fake upstreams on sockets.

import t from 'tap';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { Router } from '../../src/routing/router.js';
import { StartHold } from '../../src/routing/start-hold.js';
import { REQUEST_COLUMNS } from '../../src/store/rows.js';
import { headerLine, rowLine } from '../../src/store/segment.js';
import { testConfig } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir, type Teardown } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';
import { waitFor } from '../helpers/wait.js';

const ROWS = 200_000;
const PER_SEGMENT = 10_000;
const COST = 0.001; // each leftover row: $200 in all, against a daily budget of $1

/** A spool an earlier process left in `dataDir`: ROWS paid calls of today, 20 segments. */
function leaveSpool(dataDir: string): void {
  const dir = join(dataDir, 'spool');
  mkdirSync(dir, { recursive: true });
  const dayStart = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const at = new Date(Math.max(Date.now() - 60_000, dayStart + 1)).toISOString();
  const sample = rowLine(REQUEST_COLUMNS, rec({ at, model: 'paid/gpt-4o', usage: [3, 2], cost: COST, key: 'left' }));
  const tail = sample.slice(sample.indexOf('",') + 1);
  const base = Date.now() - 120_000;
  for (let s = 0; s < ROWS / PER_SEGMENT; s++) {
    const lines = Array.from({ length: PER_SEGMENT }, () => `["${randomUUID()}"${tail}\n`);
    writeFileSync(join(dir, `${base + s}-0feedbad-${String(s + 1).padStart(6, '0')}.jsonl`), headerLine(REQUEST_COLUMNS) + lines.join(''));
  }
}

async function gateway(t: Teardown, dataDir: string, ups: { paid: FakeOpenAI; free: FakeOpenAI }, more: { storage?: Record<string, unknown>; server?: Record<string, unknown> } = {}) {
  const config = testConfig({
    providers: { paid: fakeProvider(ups.paid.baseUrl), free: fakeProvider(ups.free.baseUrl, { group: 'free' }) },
    budgets: { daily_usd: 1, auto_switch: { enabled: true, to: 'free/gpt-4o' } },
    storage: more.storage ?? {},
    server: more.server ?? {},
  }, dataDir);
  const app = await build({ config: new ConfigHolder(config), logger: false, processMetrics: false });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  return { app, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
}

const chat = (url: string, model: string, signal?: AbortSignal) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }), ...(signal ? { signal } : {}),
});

t.test('the first paid request after a start on an exceeded budget goes to the free target; an unrelated one is not held', async (t) => {
  const dataDir = tempDir(t);
  leaveSpool(dataDir);
  const ups = { paid: await startFakeOpenAI(t), free: await startFakeOpenAI(t) };
  const { app, url } = await gateway(t, dataDir, ups);
  const started = performance.now();

  const paid = chat(url, 'paid/gpt-4o'); // its routing reads the budget: it waits for the first evaluation
  const free = await chat(url, 'free/gpt-4o'); // reads nothing: answered at once
  t.equal(free.status, 200, 'a request with no budget dependence is answered');
  const ready = await fetch(`${url}/ready`);
  t.equal(ready.status, 503, 'while the leftovers are still being read (/ready 503): it was not held');
  t.equal(ups.paid.received.length, 0, 'the paid provider has received nothing');

  const res = await paid;
  const firstSwitched = performance.now() - started;
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-tollgate-auto-switched'), 'true', 'the first paid request was switched');
  t.equal(ups.paid.received.length, 0, 'the paid provider received nothing');
  t.same(ups.free.received.map((r) => r.body.model), ['gpt-4o', 'gpt-4o'], 'the free provider received both requests');
  t.comment(`first switched answer ${Math.round(firstSwitched)} ms after listening (${ROWS} leftover rows)`);

  const id = res.headers.get('x-request-id')!;
  await app.tollgate.writer.flush();
  const s = app.tollgate.store;
  const [row] = await s.query<Record<string, unknown>>(`SELECT * FROM ${s.t('requests')} FINAL WHERE request_id = {id:UUID}`, { id });
  t.match(row, { requested_model: 'paid/gpt-4o', model: 'free/gpt-4o', provider: 'free', provider_group: 'free', auto_switched: true, status: 'success' },
    'its row: asked for the paid model, served by the free one, marked auto-switched');
  t.equal(app.tollgate.router.hold.holding, false, 'the hold is over');
});

t.test('a client that leaves while held: an aborted 499 client_closed row, nothing sent upstream', async (t) => {
  const dataDir = tempDir(t);
  leaveSpool(dataDir);
  const ups = { paid: await startFakeOpenAI(t), free: await startFakeOpenAI(t) };
  const { app, url } = await gateway(t, dataDir, ups);
  const ac = new AbortController();
  const pending = chat(url, 'paid/gpt-4o', ac.signal);
  await waitFor(() => app.tollgate.router.hold.waiting === 1);
  ac.abort();
  await t.rejects(pending);
  await waitFor(() => app.tollgate.router.hold.waiting === 0);
  await app.tollgate.storeReady;
  await app.tollgate.writer.flush();
  const s = app.tollgate.store;
  const rows = await s.query<Record<string, unknown>>(`SELECT * FROM ${s.t('requests')} FINAL WHERE api_key_name != 'left'`);
  t.equal(rows.length, 1, 'one row');
  t.match(rows[0], { requested_model: 'paid/gpt-4o', status: 'aborted', http_status: 499, error_type: 'client_closed', endpoint: 'chat.completions', cost: 0 });
  t.equal(ups.paid.received.length + ups.free.received.length, 0, 'no upstream received anything');
});

t.test('past the bound (the store down at start), requests are routed on what is known', async (t) => {
  const ups = { paid: await startFakeOpenAI(t), free: await startFakeOpenAI(t) };
  // A ClickHouse server that is not there: the store never opens, no evaluation runs.
  const { app, url } = await gateway(t, tempDir(t), ups, { storage: { clickhouse_url: 'http://127.0.0.1:9', request_timeout_ms: 300 } });
  const first = await chat(url, 'paid/gpt-4o');
  t.equal(first.status, 200, 'answered once the bound passed');
  t.equal(ups.paid.received.length, 1, 'by the paid provider: nothing is known to be spent');
  t.equal(app.tollgate.router.hold.holding, false, 'the hold is over');
  const second = await chat(url, 'paid/gpt-4o');
  t.equal(second.status, 200);
  t.equal(ups.paid.received.length, 2, 'and the next request is not held again');
  // A config reload does not arm the hold again (only the process start does).
  const cfg = app.tollgate.config.current;
  app.tollgate.config.replace({ ...cfg, budgets: { ...cfg.budgets, daily_usd: 2 } });
  t.equal(app.tollgate.router.hold.holding, false, 'not held again after a reload');
  t.equal((await chat(url, 'paid/gpt-4o')).status, 200);
  t.equal(ups.paid.received.length, 3);
});

t.test('a stop while a request is held: it is refused 503, nothing goes upstream, its row says so', async (t) => {
  // The store down at start (no evaluation ever runs) and a bound longer than the stop's: before, the stop's deadline
  // cut the client, then the hold was released and the request went to the paid provider for nobody (review s12a).
  const ups = { paid: await startFakeOpenAI(t), free: await startFakeOpenAI(t) };
  const dataDir = tempDir(t);
  const { app, url } = await gateway(t, dataDir, ups, { storage: { clickhouse_url: 'http://127.0.0.1:9', request_timeout_ms: 30_000 }, server: { shutdown_timeout_s: 3 } });
  const pending = chat(url, 'paid/gpt-4o');
  await waitFor(() => app.tollgate.router.hold.waiting === 1);
  const closing = app.close();
  const res = await pending;
  t.equal(res.status, 503, 'refused');
  t.equal(res.headers.get('retry-after'), '1');
  const body = (await res.json()) as { error: { code: string; request_id: string } };
  t.equal(body.error.code, 'TOLLGATE_ERR_STORE_UNAVAILABLE');
  await closing;
  t.equal(ups.paid.received.length + ups.free.received.length, 0, 'no upstream received anything');
  // The store never opened: the row is in the spool.
  const dir = join(dataDir, 'spool');
  const lines = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.startsWith('[')));
  const rows = lines.map((l) => Object.fromEntries((JSON.parse(l) as unknown[]).map((v, i) => [REQUEST_COLUMNS[i], v])));
  t.equal(rows.length, 1, 'one row');
  t.match(rows[0], { request_id: body.error.request_id, requested_model: 'paid/gpt-4o', status: 'failure', http_status: 503, error_type: 'TOLLGATE_ERR_STORE_UNAVAILABLE' });
});

t.test('which requests wait: only those whose routing reads the budget or a quota', async (t) => {
  const cfg = testConfig({
    providers: {
      paid: fakeProvider('http://127.0.0.1:1/v1'),
      free: fakeProvider('http://127.0.0.1:1/v1', { group: 'free' }),
      sub: fakeProvider('http://127.0.0.1:1/v1', { group: 'subscription', quota: { kind: 'daily_tokens', limit: 1000 } }),
      open: fakeProvider('http://127.0.0.1:1/v1', { group: 'subscription', quota: { kind: 'unlimited' } }),
    },
    combos: { limited: { strategy: 'fallback', models: ['sub/gpt-4o', 'free/gpt-4o'] }, unlimited: { strategy: 'fallback', models: ['open/gpt-4o', 'free/gpt-4o'] } },
    budgets: { daily_usd: 1, auto_switch: { enabled: true, to: 'free/gpt-4o' } },
  }, tempDir(t));
  const router = (c: typeof cfg) => new Router(() => c, { gates: { hold: new StartHold({ boundMs: () => 1000 }) } });
  const r = router(cfg);
  t.equal(r.mustWait('paid/gpt-4o'), true, 'a paid model with the auto-switch on');
  t.equal(r.mustWait('paid/gpt-4o(high)'), true, 'with a thinking suffix too');
  t.equal(r.mustWait('free/gpt-4o'), false, 'a free model');
  t.equal(r.mustWait('sub/gpt-4o'), false, 'a subscription model (its quota is asked by combos only)');
  t.equal(r.mustWait('limited'), true, 'a combo with a member whose provider has a quota');
  t.equal(r.mustWait('unlimited'), false, 'a combo whose members have no quota that can run out');
  t.equal(r.mustWait('paid/no-such-model'), false, 'a name nothing is configured under (its 404 does not wait)');
  const off = router({ ...cfg, budgets: { ...cfg.budgets, auto_switch: { enabled: false } } });
  t.equal(off.mustWait('paid/gpt-4o'), false, 'the auto-switch off');
  const noDaily = router({ ...cfg, budgets: { auto_switch: cfg.budgets.auto_switch } });
  t.equal(noDaily.mustWait('paid/gpt-4o'), false, 'no daily budget');
  r.hold.release();
  t.equal(r.mustWait('paid/gpt-4o'), false, 'nothing waits once the hold is released');
  // A stop that begins while the figures are unknown: a request arriving after it (its body still coming when the
  // stop began) is refused as the held ones are, not routed on unknown figures (review s12f).
  const stopping = router(cfg);
  stopping.hold.stop();
  t.equal(stopping.mustWait('paid/gpt-4o'), true, 'after the stop, a request whose routing reads the budget still waits');
  t.equal(stopping.hold.stopped, true, 'and is refused (held.ts)');
  await stopping.hold.wait(); // at once: nothing to wait for
  t.equal(stopping.mustWait('free/gpt-4o'), false, 'a request that reads no figure is routed');
  stopping.hold.release();
  t.equal(stopping.mustWait('paid/gpt-4o'), true, 'a release after the stop (the evaluation ending during it) changes nothing');
  t.equal(new Router(() => cfg).mustWait('limited'), false, 'a router given no hold never waits');
});
