// Keep-alive pings against the real app and fake OpenAI upstreams on real sockets, with 2 s windows: a client
// request opens a connection's window; right after it ends the connection is pinged (one user turn, max_tokens 1),
// the ping's row is kind 'keepalive' with the fake's usage and cost, it stays out of /api/usage and
// tollgate_requests_total, and it opens the next window, so the pings go on. A connection with keep-alive off is
// never pinged; a live config edit turns pings off; a failed ping is recorded and retried; a restarted app recovers
// the open window from ClickHouse; a call whose row is not in ClickHouse yet counts before a ping. The pure window
// rule is checked first.

import t from 'tap';
import { request } from 'undici';
import { advance, opensWindow, parseWindow, pingModel, replay, replayFrom, UnstoredCalls, type Window } from '../../src/services/keepalive-window.js';
import { testConfig, startApp, type TestApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { bucketsOf } from '../helpers/clients.js';
import { metricValue } from '../helpers/prom.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import type { ProviderConfig } from '../../src/config/types.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { toRow } from '../../src/store/rows.js';

// chdb binds one data directory per process: every app of this file uses this one.
const dataDir = tempDir(t);
const W = 2000;
// How late a ping may be and still be "right after" its window: anything before a whole window late (a missed
// window's ping comes at 2 W or later), however late a loaded machine makes it. Before a ping the gateway reads the
// record and writes its claim to the store; with three CPU-bound processes on the two cores that took the ping to
// 1.7 s after its window, past the half window this allowed before (a CI run failed on it once).
const LATE = W - 100;

t.test('the window rule', async (t) => {
  t.same(['2s', '30m', '5h', '1d'].map(parseWindow), [2000, 1_800_000, 18_000_000, 86_400_000], 'windows in ms');
  t.equal(parseWindow('0s'), 1000, 'at least 1 s');
  t.throws(() => parseWindow('5 hours'), 'a malformed window');

  t.ok(opensWindow({ kind: 'request', connection: 'default', status: 'failure' }), 'a failed request made an upstream call');
  t.ok(opensWindow({ kind: 'attempt', connection: 'a', status: 'success' }));
  t.ok(opensWindow({ kind: 'keepalive', connection: 'a', status: 'success' }));
  t.notOk(opensWindow({ kind: 'keepalive', connection: 'a', status: 'failure' }), 'a failed ping opens no window');
  t.notOk(opensWindow({ kind: 'combo', connection: 'a', status: 'success' }), 'a combo row is counted by its attempts');
  t.notOk(opensWindow({ kind: 'request', connection: '', status: 'failure' }), 'no upstream call');
  t.notOk(opensWindow({ kind: 'request', connection: 'default', status: 'failure', dispatched: false }), 'refused before its call: its connection never used');
  t.ok(opensWindow({ kind: 'request', connection: 'default', status: 'failure', dispatched: true }));

  const w = advance(null, 1000, W);
  t.same(w, { start: 1000, end: 3000, prevEnd: -Infinity }, 'the first call opens a window');
  t.equal(advance(w, 2999, W), w, 'a call inside it changes nothing');
  t.same(advance(w, 3000, W), { start: 3000, end: 5000, prevEnd: 3000 }, 'the first call after it opens the next');
  const next = advance(w, 4000, W);
  t.same(advance(next, 3500, W), { start: 3500, end: 5500, prevEnd: 3000 }, 'a call seen late that started first takes the window over');
  t.equal(advance(next, 2500, W), next, 'a call seen late from the window before changes nothing');
  t.same(replay([0, 500, 1999, 2000, 3000, 4100], W), { start: 4100, end: 6100, prevEnd: 4000 } satisfies Window, 'replayed: windows at 0, 2000, 4100');
  t.equal(replay([], W), null, 'no calls, no window');

  // The replay over the record starts a day back on a multiple of the window: replicas reading moments apart agree.
  const FIVE_H = 18_000_000;
  const now = Date.UTC(2026, 10, 28, 14, 37, 12, 345);
  const from = replayFrom(now, FIVE_H);
  t.ok(from % FIVE_H === 0 && from <= now - 86_400_000 && from > now - 86_400_000 - FIVE_H, 'a day back, on the window grid');
  t.equal(replayFrom(now + 300, FIVE_H), from, 'the same span for a read 300 ms later');
  t.equal(replayFrom(now, 86_400_000 * 2), Date.UTC(2026, 10, 23), 'two windows back (four days) for a window over half a day, on its grid');

  // This replica's calls not stored yet join the record's before a ping, until the writer says they are stored.
  const own = new UnstoredCalls();
  own.add('r1', 'p#a', 5000);
  own.add('r2', 'p#b', 5100);
  own.add('r3', 'p#a', 1500);
  t.same(own.merge('p#a', [1000, 4000], 0), [1000, 1500, 4000, 5000], 'merged in order, this connection only');
  t.same(own.merge('p#a', [1000], 2000), [1000, 5000], 'none from before the span');
  own.written(['r1', 'r9']);
  t.same(own.merge('p#a', [4000], 0), [1500, 4000], 'a stored call is read from the record only');
  for (let i = 0; i < 10_001; i++) own.add(`x${i}`, 'p#c', i);
  t.same(own.merge('p#a', [], 0), [], 'beyond 10,000 unstored calls the oldest go');
  t.equal(own.merge('p#c', [], 0)[0], 1, 'the newest 10,000 stay');

  const p = (models: Record<string, unknown>, model?: string) =>
    ({ models, keepalive: { enabled: true, window: '5h', ...(model ? { model } : {}) } }) as unknown as ProviderConfig;
  t.equal(pingModel(p({ emb: { kind: 'embedding' }, chat: { kind: 'llm' } })), 'chat', 'the first chat model');
  t.equal(pingModel(p({ a: { kind: 'llm' }, b: { kind: 'llm' } }, 'b')), 'b', 'keepalive.model when set');
});

/** Pings are the requests with max_tokens 1 (client requests here send none). */
const pings = (f: FakeOpenAI) => f.received.filter((r) => r.body.max_tokens === 1);

async function chat(gw: TestApp, model: string): Promise<void> {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
}

/** Start times (epoch ms) of the rows matching `where`, oldest first. */
async function starts(gw: TestApp, where: string): Promise<number[]> {
  await gw.flush();
  const s = gw.app.tollgate.store;
  const rows = await s.query<{ t: string }>(`SELECT toUnixTimestamp64Milli(ts) AS t FROM ${s.t('requests')} FINAL WHERE ${where} ORDER BY ts`);
  return rows.map((r) => Number(r.t));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a ping right after the window ends, recorded apart, opening the next window', async (t) => {
  const fake = await startFakeOpenAI(t);
  const multi = await startFakeOpenAI(t);
  const raw = {
    providers: {
      fake: fakeProvider(fake.baseUrl, { keepalive: { enabled: true, model: 'gpt-4o', window: '2s' } }),
      // keep-alive on for the provider, off for the key 'off'; the model pinged is the first listed.
      multi: fakeProvider(multi.baseUrl, {
        auth: { type: 'api_key', keys: [{ name: 'on', key: 'sk-on' }, { name: 'off', key: 'sk-off', keepalive: false }] },
        keepalive: { enabled: true, window: '2s' },
      }),
    },
  };
  const gw = await startApp(t, raw, { dataDir });

  await chat(gw, 'fake/gpt-4o');
  await chat(gw, 'multi/gpt-4o');
  await chat(gw, 'multi/gpt-4o');
  t.same(multi.received.map((r) => r.headers.authorization).sort(), ['Bearer sk-off', 'Bearer sk-on'], 'one request on each connection of multi');
  const [opened] = await starts(gw, `provider = 'fake' AND kind = 'request'`);
  const requestsBefore = metricValue(await gw.metrics(), 'tollgate_requests_total', {});
  t.equal(requestsBefore, 3, 'three client requests counted');

  await waitFor(() => pings(fake).length >= 1, W + LATE);
  await sleep(300);
  t.equal(pings(fake).length, 1, 'exactly one ping once the window ended');
  const ping = pings(fake)[0]!;
  t.same(ping.body, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }, 'the smallest request');
  t.equal(ping.headers.authorization, 'Bearer sk-upstream-secret-123', 'with the connection key');

  const [row] = await gw.rows(`provider = 'fake' AND kind = 'keepalive'`);
  t.ok(row, 'the ping has its row');
  t.match(row, {
    kind: 'keepalive', connection: 'default', endpoint: 'keepalive', model: 'fake/gpt-4o', requested_model: 'fake/gpt-4o',
    status: 'success', http_status: 200, error_type: '', usage_source: 'reported', api_key_name: '', parent_id: null,
  });
  t.same(bucketsOf(row!), [8, 3, null, 5, 2, 18], "the fake's usage");
  t.equal(Number(row!.cost), (8 * 2.5 + 3 * 1.25 + 7 * 10) / 1e6, 'cost at the provider price');
  const [pinged] = await starts(gw, `provider = 'fake' AND kind = 'keepalive'`);
  t.ok(pinged! - opened! >= W, `sent after the window ended (${pinged! - opened!} ms after it opened)`);
  t.ok(pinged! - opened! < W + LATE, 'and right after');

  const metrics = await gw.metrics();
  t.equal(metricValue(metrics, 'tollgate_keepalive_pings_total', { provider: 'fake', status: 'success' }), 1, 'counted as a ping');
  t.equal(metricValue(metrics, 'tollgate_requests_total', {}), requestsBefore, 'not as a request');
  const usage = (await (await request(`${gw.url}/api/usage?period=today`)).body.json()) as { summary: Record<string, number> };
  t.same(usage.summary, { requests: 3, tokens: 3 * 18, cost: Number(((3 * 93.75) / 1e6).toFixed(12)) }, '/api/usage counts the client requests only');

  // The ping opened the next window: another ping follows one window later.
  await waitFor(() => pings(fake).length >= 2, W + LATE);
  // The upstream has the request before the gateway has the answer and the row: wait for the row.
  await waitFor(async () => (await gw.rows(`provider = 'fake' AND kind = 'keepalive'`)).length >= 2, 3000);
  const times = await starts(gw, `provider = 'fake' AND kind = 'keepalive'`);
  t.equal(times.length, 2, 'two ping rows');
  t.ok(times[1]! - times[0]! >= W - 100, `pings a window apart (${times[1]! - times[0]!} ms)`);
  t.ok(times[1]! - times[0]! < W + LATE, 'and no more');

  const onPings = pings(multi).filter((r) => r.headers.authorization === 'Bearer sk-on');
  t.ok(onPings.length >= 1, "multi's connection 'on' is pinged");
  t.equal(onPings[0]!.body.model, 'gpt-4o', "with the provider's first model");
  t.equal(pings(multi).filter((r) => r.headers.authorization === 'Bearer sk-off').length, 0, "the connection with keepalive: false is not");
  await waitFor(async () => (await gw.rows(`provider = 'multi' AND kind = 'keepalive'`)).length >= onPings.length, 3000);
  t.same(
    (await gw.rows(`provider = 'multi' AND kind = 'keepalive'`)).map((r) => r.connection).filter((c, i, a) => a.indexOf(c) === i),
    ['on'],
    'rows name the connection',
  );

  // A live edit turns pings off: the window that is open ends without one.
  gw.holder.replace(testConfig({ ...raw, providers: { ...raw.providers, fake: fakeProvider(fake.baseUrl) } }, dataDir));
  const sent = pings(fake).length;
  await sleep(W + 500);
  t.equal(pings(fake).length, sent, 'no ping after keep-alive was turned off');
});

t.test('a failed ping is recorded and retried; a restart recovers the open window from ClickHouse', async (t) => {
  const fake = await startFakeOpenAI(t);
  const raw = { providers: { again: fakeProvider(fake.baseUrl, { keepalive: { enabled: true, window: '2s' } }) } };
  const first = await startApp(t, raw, { dataDir });
  await chat(first, 'again/gpt-4o');
  const [opened] = await starts(first, `provider = 'again' AND kind = 'request'`);
  await first.close();
  t.equal(pings(fake).length, 0, 'the first app stopped before the window ended');

  // The ping of the recovered window fails; the retry (after min(60 s, window)) succeeds.
  fake.next({ kind: 'ok' }, { kind: 'error', status: 503, body: { error: { message: 'overloaded' } } });
  const second = await startApp(t, raw, { dataDir });
  t.ok(Date.now() < opened! + W, 'the second app is up while the window is open');
  await chat(second, 'again/gpt-4o'); // inside the recovered window: it opens nothing
  await waitFor(() => pings(fake).length >= 2, 2 * W + 1500);
  await waitFor(async () => (await second.rows(`provider = 'again' AND kind = 'keepalive'`)).length >= 2, 3000);

  const rows = await second.rows(`provider = 'again' AND kind = 'keepalive'`);
  t.same(rows.map((r) => [r.status, Number(r.http_status)]), [['failure', 503], ['success', 200]], 'the failure, then the retry');
  const times = await starts(second, `provider = 'again' AND kind = 'keepalive'`);
  t.ok(times[0]! - opened! >= W && times[0]! - opened! < W + LATE, `pinged when the recovered window ended (${times[0]! - opened!} ms)`);
  t.ok(times[1]! - times[0]! >= W - 100, `retried after min(60 s, window) (${times[1]! - times[0]!} ms)`);
  const metrics = await second.metrics();
  t.equal(metricValue(metrics, 'tollgate_keepalive_pings_total', { provider: 'again', status: 'failure' }), 1, 'the failure counted');
  t.equal(metricValue(metrics, 'tollgate_keepalive_pings_total', { provider: 'again', status: 'success' }), 1, 'the retry counted');
});

t.test('a call not in ClickHouse yet counts before a ping: a record that lags does not hold the ping back', async (t) => {
  // Rows reach ClickHouse 5 s after a request here, so when the window ends the record shows only an older call,
  // whose ping a process that is gone claimed long ago. This replica's own call, not stored yet, is read with the
  // record: the window is its own and it pings at once (from the record alone it would lose that old claim, and
  // again, until its call was stored: about 6 s after it instead of 2).
  const fake = await startFakeOpenAI(t);
  const raw = { storage: { batch: { flush_ms: 5000 } }, providers: { lag: fakeProvider(fake.baseUrl, { keepalive: { enabled: true, model: 'gpt-4o', window: '2s' } }) } };
  const gw = await startApp(t, raw, { dataDir });
  const store = gw.app.tollgate.store;
  const old = Date.now() - 60_000;
  await store.insert('requests', [toRow(makeRecord({
    requestId: uuidv7(old), connection: 'default', startedAt: old, endedAt: old + 10, endpoint: 'chat.completions', provider: 'lag', providerGroup: 'paid',
    model: 'lag/gpt-4o', requestedModel: 'lag/gpt-4o', modelKnown: true, apiKeyName: '', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 1, cached: null, cacheWrite: null, output: 1, reasoning: null }, usageSource: 'reported',
    cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 9,
  }))]);
  // Claimed by a process that is gone, for every round (windows since the end) this test can reach, no ping recorded.
  const epoch = Math.floor((Date.now() - (old + W)) / W);
  for (let k = epoch - 1; k <= epoch + 6; k++) {
    await store.insert('claims', [{ key: `ping:lag#default:${old + W}:${k}:0`, owner: 'a-process-gone', at: old + W + 100 }], `claim-test-gone-${k}`);
  }
  const sent = Date.now();
  await chat(gw, 'lag/gpt-4o');
  await waitFor(() => pings(fake).length >= 1, 10_000);
  const after = Date.now() - sent;
  t.ok(after < W + 2500, `the ping ${after} ms after the call (its window is ${W} ms)`);
});
