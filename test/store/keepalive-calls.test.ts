// The keep-alive service's read of the record (store/keepalive.ts, callsOfConnections): every wanted connection's
// upstream calls since its own start, oldest first, in one read. A start used to make a query for each keep-alive
// connection (2,000 connections: 5 s before the alerts started). Checked on rows of several providers and
// connections: each connection gets its own calls only, from its own `from` (the read goes from the earliest), combo
// rows left out, pings and failures kept for the window rule; then 2,000 connections in one query.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind, type RequestStatus } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { callsOfConnections } from '../../src/store/keepalive.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'kacalls', prefix: 'tollgate-kacalls-' });
await migrate(store);

const T0 = Date.UTC(2026, 11, 1, 8);
const MIN = 60_000;

function row(o: { at: number; provider: string; connection: string; kind?: RecordKind; status?: RequestStatus }) {
  const kind = o.kind ?? 'request';
  const status = o.status ?? 'success';
  return toRow(makeRecord({
    kind, requestId: uuidv7(o.at), parentId: '', combo: kind === 'combo' || kind === 'attempt' ? 'c' : '', attempt: 0, connection: o.connection,
    startedAt: o.at, endedAt: o.at + 50, endpoint: 'chat.completions', provider: o.provider, providerGroup: 'subscription', model: `${o.provider}/m`,
    requestedModel: 'm', modelKnown: true, apiKeyName: 'k', stream: false, status, httpStatus: status === 'success' ? 200 : 503, errorType: status === 'success' ? '' : '503',
    usage: { input: 1, cached: null, cacheWrite: null, output: 1, reasoning: null }, usageSource: 'reported', cost: { cost: 0, listCost: 0 },
    latency: { kind: 'unary', totalMs: 50 }, upstreamMs: 40,
  }));
}

await store.insert('requests', [
  row({ at: T0 + 1 * MIN, provider: 'claude', connection: 'work' }),
  row({ at: T0 + 2 * MIN, provider: 'claude', connection: 'home' }),
  row({ at: T0 + 3 * MIN, provider: 'claude', connection: 'work', kind: 'keepalive', status: 'failure' }),
  row({ at: T0 + 4 * MIN, provider: 'claude', connection: 'work', kind: 'combo' }),
  row({ at: T0 + 5 * MIN, provider: 'claude', connection: 'work', kind: 'attempt' }),
  row({ at: T0 + 6 * MIN, provider: 'codex', connection: 'work' }), // the same connection name on another provider
  row({ at: T0 + 7 * MIN, provider: 'codex', connection: 'home' }),
  row({ at: T0 + 8 * MIN, provider: 'gemini', connection: 'default' }), // not wanted
  row({ at: T0 - 10 * MIN, provider: 'claude', connection: 'work' }), // before every `from`
]);

t.test('each connection its own calls, from its own start, oldest first', async (t) => {
  const [work, home, codexWork, none] = await callsOfConnections(store, [
    { provider: 'claude', connection: 'work', from: T0 },
    { provider: 'claude', connection: 'home', from: T0 + 2 * MIN + 1 }, // its one call is before its own `from`
    { provider: 'codex', connection: 'work', from: T0 - 60 * MIN },
    { provider: 'claude', connection: 'none', from: T0 },
  ]);
  t.same(work!.map((c) => [c.t - T0, c.kind, c.status]), [[MIN, 'request', 'success'], [3 * MIN, 'keepalive', 'failure'], [5 * MIN, 'attempt', 'success']], 'no combo row, nothing before its start');
  t.same(home, [], 'a call before its own start is not its (the read went from the earliest)');
  t.same(codexWork!.map((c) => c.t - T0), [6 * MIN], 'a connection name on another provider is another connection');
  t.same(none, [], 'a connection without calls');
  t.same(await callsOfConnections(store, []), [], 'nothing wanted: nothing read');
});

t.test('2,000 connections: one query', async (t) => {
  const wanted = Array.from({ length: 2000 }, (_, i) => ({ provider: i % 2 === 0 ? 'claude' : 'codex', connection: i < 2 ? 'work' : `key-${i}`, from: T0 }));
  const query = store.query.bind(store);
  let queries = 0;
  store.query = ((...args: Parameters<typeof store.query>) => {
    queries++;
    return query(...args);
  }) as typeof store.query;
  t.teardown(() => void (store.query = query));
  const calls = await callsOfConnections(store, wanted);
  t.equal(queries, 1, 'one read');
  t.equal(calls.length, 2000);
  t.same(calls[0]!.map((c) => c.t - T0), [MIN, 3 * MIN, 5 * MIN], 'claude/work');
  t.same(calls[1]!.map((c) => c.t - T0), [6 * MIN], 'codex/work');
  t.equal(calls.slice(2).flat().length, 0, 'the others: none');
});
