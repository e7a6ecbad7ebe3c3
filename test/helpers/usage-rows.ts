// Known usage rows for the analytics tests, and an app that serves the analytics routes on a fixed clock under /fixed.
// Every expected number in the tests is worked out by hand from the table below.
//
// NOW = Tuesday 2026-12-01 10:30 UTC: today and this month began at 00:00 (the rows at 23:59:59.999 and 00:00 straddle
// the day and month edge), this week on Monday 2026-11-30; the projection reads 2026-11-24 to 2026-11-30.
//
// Client requests (request and combo rows; tokens total = the five buckets; providers: sub = subscription,
// paid = paid, free = free):
//   R1  12-01 10:00:00.000 paid/big   success 200  in 1000 cached 200 out 300 reasoning 100 = 1600  $0.01     2.0 s  alice stream
//   R2  12-01 09:15        sub/m1     success      in 500 out 500 = 1000                     $0 (list 0.004)   1.0 s  bob
//   R3  12-01 00:00:00.000 free/llama failure 502  no usage reported = 0                      $0               0.5 s  alice
//   R4  11-30 23:59:59.999 paid/small success      40 + 60 = 100                             $0.0001          0.8 s  alice
//   R5  12-01 08:00        paid/big   aborted 499  50 + 10 = 60                              $0.00006         0.3 s  bob
//   C1  12-01 09:59:00.000 combo smart success (last attempt sub/m1): 500 tokens, $0 (list 0.002)            1.8 s  carol
//       A1 attempt 1 paid/big failure 500, no usage; A2 attempt 2 sub/m1 success 300 + 200 = 500 (list 0.002)
//   C2  12-01 10:10        combo fuse  success (judge paid/big): 850 tokens, $0.0023                        3.0 s  carol
//       B1 attempt 1 paid/small 100 + 100 = 200 $0.0003; B2 attempt 2 free/llama 100 + 50 = 150 $0;
//       B3 attempt 3 (judge) paid/big 400 + 100 = 500 $0.002
//   C3  12-01 10:20        combo smart failure 500 (last attempt sub/m1): 0 tokens                          0.4 s  carol
//       A3 attempt 1 paid/big failure 429; A4 attempt 2 sub/m1 failure 500
//   R6  11-25 12:00        paid/big   success 1000 + 1000 = 2000 $0.03
//   R7  11-24 00:00:00.000 free/llama success 700 + 0 = 700 $0
//   R11 11-24 06:00        sub/m1     success 200 + 100 = 300 $0 (list 0.0012)
//   R8  11-23 23:59:59.999 paid/big   success 10 + 10 = 20 $0.5
//   R10 11-01 00:00:00.000 sub/m1     success 100 + 100 = 200 $0 (list 0.0008)
//   R9  10-31 23:59:59.999 paid/big   success 10 + 10 = 20 $1
//   D1  10-25 00:30 (Paris 02:30 CEST) paid/small 11 tokens; D2 10-25 01:30 (Paris 02:30 CET) paid/small 22 tokens
//   X1, T1, T2  2025-06-01 12:00:00.000 (one timestamp) paid/small 10 tokens each; X1 is inserted twice, in two batches
// Keep-alive pings (excluded unless include_keepalive=true):
//   K1  12-01 05:00 sub/m1 1 + 1 = 2 $0 (list 0.000003); K2 12-01 06:00 paid/small 5 + 5 = 10 $0.00002
// Every row of the main batch is inserted twice with one deduplication token (a retried batch, as the writer retries).

import type { Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { build } from '../../src/app.js';
import { analyticsRoutes } from '../../src/api/analytics/index.js';
import { usageRoutes } from '../../src/api/usage.js';
import { ConfigHolder } from '../../src/config/watch.js';
import type { ProviderGroup } from '../../src/config/types.js';
import { toRow, type RequestRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind, type RequestStatus } from '../../src/ledger/record.js';
import type { Usage } from '../../src/ledger/types.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { testConfig } from './app.js';
import { tempDir } from './tmp.js';

export const NOW = Date.UTC(2026, 11, 1, 10, 30);
export const at = (s: string): number => Date.parse(s);

const mock = (name: string, group: ProviderGroup, models: string[]) => ({
  name, group, format: 'mock', price: { input: 1, output: 2 }, mock: { chunks: 1, latency_ms: 0, chunk_delay_ms: 0 },
  models: Object.fromEntries(models.map((m) => [m, { kind: 'llm' }])),
});

export const CONFIG = {
  providers: {
    sub: mock('Sub Co', 'subscription', ['m1']),
    paid: mock('Paid Inc', 'paid', ['big', 'small']),
    free: mock('Free Org', 'free', ['llama']),
  },
  combos: {
    smart: { strategy: 'fallback', models: ['paid/big', 'sub/m1'] },
    fuse: { strategy: 'fusion', models: ['paid/small', 'free/llama'], judge: 'paid/big' },
    idle: { strategy: 'round-robin', models: ['paid/big', 'free/llama'] },
  },
};

const GROUP: Record<string, ProviderGroup> = { sub: 'subscription', paid: 'paid', free: 'free' };

interface Spec {
  id?: string;
  at: string;
  model: string;
  kind?: RecordKind;
  status?: RequestStatus;
  http?: number;
  /** input, output, and optionally cached and reasoning; null: no usage reported. */
  usage?: [number, number, number?, number?] | null;
  cost?: number;
  list?: number;
  ms?: number;
  key?: string;
  combo?: string;
  parent?: string;
  attempt?: number;
  stream?: boolean;
  error?: string;
}

export function rec(s: Spec): RequestRow & { request_id: string } {
  const startedAt = at(s.at);
  const provider = s.model.split('/')[0]!;
  const u = s.usage === undefined ? [0, 0] : s.usage;
  const usage: Usage = u === null
    ? { input: null, cached: null, cacheWrite: null, output: null, reasoning: null }
    : { input: u[0], cached: u[2] ?? null, cacheWrite: null, output: u[1], reasoning: u[3] ?? null };
  const ms = s.ms ?? 100;
  const status = s.status ?? 'success';
  return toRow(makeRecord({
    kind: s.kind ?? 'request', requestId: s.id ?? uuidv7(startedAt), parentId: s.parent ?? '', combo: s.combo ?? '', attempt: s.attempt ?? 0,
    startedAt, endedAt: startedAt + ms, endpoint: 'chat.completions', provider, providerGroup: GROUP[provider]!, model: s.model,
    requestedModel: s.combo !== undefined && s.kind === 'combo' ? s.combo : s.model, modelKnown: true, apiKeyName: s.key ?? 'alice',
    stream: s.stream ?? false, status, httpStatus: s.http ?? (status === 'success' ? 200 : 500), errorType: s.error ?? (status === 'success' ? '' : 'upstream_error'),
    usage, usageSource: u === null ? 'none' : 'reported', cost: { cost: s.cost ?? 0, listCost: s.list ?? s.cost ?? 0 },
    latency: s.stream ? { kind: 'stream', ttftMs: 250, totalMs: ms } : { kind: 'unary', totalMs: ms }, upstreamMs: ms - 10,
  })) as RequestRow & { request_id: string };
}

const id = (s: string): string => uuidv7(at(s));
export const IDS = { C1: id('2026-12-01T09:59:00Z'), C2: id('2026-12-01T10:10:00Z'), C3: id('2026-12-01T10:20:00Z') };

export const ROWS = {
  R1: rec({ at: '2026-12-01T10:00:00.000Z', model: 'paid/big', usage: [1000, 300, 200, 100], cost: 0.01, ms: 2000, stream: true }),
  R2: rec({ at: '2026-12-01T09:15:00Z', model: 'sub/m1', usage: [500, 500], cost: 0, list: 0.004, ms: 1000, key: 'bob' }),
  R3: rec({ at: '2026-12-01T00:00:00.000Z', model: 'free/llama', status: 'failure', http: 502, usage: null, ms: 500, error: 'TOLLGATE_ERR_UPSTREAM_CONNECT' }),
  R4: rec({ at: '2026-11-30T23:59:59.999Z', model: 'paid/small', usage: [40, 60], cost: 0.0001, ms: 800 }),
  R5: rec({ at: '2026-12-01T08:00:00Z', model: 'paid/big', status: 'aborted', http: 499, usage: [50, 10], cost: 0.00006, ms: 300, key: 'bob', error: 'client_closed' }),
  C1: rec({ id: IDS.C1, at: '2026-12-01T09:59:00.000Z', kind: 'combo', combo: 'smart', model: 'sub/m1', usage: [300, 200], cost: 0, list: 0.002, ms: 1800, key: 'carol' }),
  A1: rec({ at: '2026-12-01T09:59:00.010Z', kind: 'attempt', combo: 'smart', parent: IDS.C1, attempt: 1, model: 'paid/big', status: 'failure', usage: null, key: 'carol' }),
  A2: rec({ at: '2026-12-01T09:59:00.200Z', kind: 'attempt', combo: 'smart', parent: IDS.C1, attempt: 2, model: 'sub/m1', usage: [300, 200], cost: 0, list: 0.002, ms: 1500, key: 'carol' }),
  C2: rec({ id: IDS.C2, at: '2026-12-01T10:10:00Z', kind: 'combo', combo: 'fuse', model: 'paid/big', usage: [600, 250], cost: 0.0023, ms: 3000, key: 'carol' }),
  B1: rec({ at: '2026-12-01T10:10:00.005Z', kind: 'attempt', combo: 'fuse', parent: IDS.C2, attempt: 1, model: 'paid/small', usage: [100, 100], cost: 0.0003, ms: 1000, key: 'carol' }),
  B2: rec({ at: '2026-12-01T10:10:00.006Z', kind: 'attempt', combo: 'fuse', parent: IDS.C2, attempt: 2, model: 'free/llama', usage: [100, 50], cost: 0, ms: 1200, key: 'carol' }),
  B3: rec({ at: '2026-12-01T10:10:01.300Z', kind: 'attempt', combo: 'fuse', parent: IDS.C2, attempt: 3, model: 'paid/big', usage: [400, 100], cost: 0.002, ms: 1600, key: 'carol' }),
  C3: rec({ id: IDS.C3, at: '2026-12-01T10:20:00Z', kind: 'combo', combo: 'smart', model: 'sub/m1', status: 'failure', http: 500, usage: null, ms: 400, key: 'carol' }),
  A3: rec({ at: '2026-12-01T10:20:00.010Z', kind: 'attempt', combo: 'smart', parent: IDS.C3, attempt: 1, model: 'paid/big', status: 'failure', http: 429, usage: null, key: 'carol' }),
  A4: rec({ at: '2026-12-01T10:20:00.200Z', kind: 'attempt', combo: 'smart', parent: IDS.C3, attempt: 2, model: 'sub/m1', status: 'failure', http: 500, usage: null, ms: 150, key: 'carol' }),
  R6: rec({ at: '2026-11-25T12:00:00Z', model: 'paid/big', usage: [1000, 1000], cost: 0.03 }),
  R7: rec({ at: '2026-11-24T00:00:00.000Z', model: 'free/llama', usage: [700, 0], cost: 0 }),
  R11: rec({ at: '2026-11-24T06:00:00Z', model: 'sub/m1', usage: [200, 100], cost: 0, list: 0.0012 }),
  R8: rec({ at: '2026-11-23T23:59:59.999Z', model: 'paid/big', usage: [10, 10], cost: 0.5 }),
  R10: rec({ at: '2026-11-01T00:00:00.000Z', model: 'sub/m1', usage: [100, 100], cost: 0, list: 0.0008 }),
  R9: rec({ at: '2026-10-31T23:59:59.999Z', model: 'paid/big', usage: [10, 10], cost: 1 }),
  D1: rec({ at: '2026-10-25T00:30:00Z', model: 'paid/small', usage: [10, 1] }),
  D2: rec({ at: '2026-10-25T01:30:00Z', model: 'paid/small', usage: [20, 2] }),
  K1: rec({ at: '2026-12-01T05:00:00Z', kind: 'keepalive', model: 'sub/m1', usage: [1, 1], cost: 0, list: 0.000003 }),
  K2: rec({ at: '2026-12-01T06:00:00Z', kind: 'keepalive', model: 'paid/small', usage: [5, 5], cost: 0.00002 }),
  X1: rec({ at: '2025-06-01T12:00:00.000Z', model: 'paid/small', usage: [5, 5] }),
  T1: rec({ at: '2025-06-01T12:00:00.000Z', model: 'paid/small', usage: [5, 5] }),
  T2: rec({ at: '2025-06-01T12:00:00.000Z', model: 'paid/small', usage: [5, 5] }),
};
export type RowName = keyof typeof ROWS;

/** The client requests, newest first by (ts, request_id), as the log lists them. */
export function clientOrder(): RowName[] {
  return (Object.keys(ROWS) as RowName[])
    .filter((k) => ROWS[k].kind === 'request' || ROWS[k].kind === 'combo')
    .sort((a, b) => Number(ROWS[b].ts) - Number(ROWS[a].ts) || (ROWS[b].request_id < ROWS[a].request_id ? -1 : 1));
}

export interface Fixture {
  readonly app: FastifyInstance;
  readonly base: string;
  get(path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string; json: any }>;
}

export async function startFixture(t: Test): Promise<Fixture> {
  const holder = new ConfigHolder(testConfig(CONFIG, tempDir(t)));
  const app = await build({ config: holder, logger: false, processMetrics: false });
  // The same plugins on a fixed clock, beside the production ones (which read Date.now).
  await app.register(usageRoutes, { store: app.tollgate.store, now: () => NOW, prefix: '/fixed' });
  await app.register(analyticsRoutes, { store: app.tollgate.store, config: holder, now: () => NOW, prefix: '/fixed' });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  await app.tollgate.storeReady;
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

  const { X1, ...main } = ROWS;
  const batch = [...Object.values(main), X1];
  await app.tollgate.store.insert('requests', batch, 'fixture-batch');
  await app.tollgate.store.insert('requests', batch, 'fixture-batch'); // the retry of a batch whose answer was lost
  await app.tollgate.store.insert('requests', [X1]); // the same row again in another batch: the raw table dedupes it

  return {
    app,
    base,
    async get(path) {
      const res = await fetch(`${base}${path}`);
      const text = await res.text();
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
      return { status: res.status, headers, text, json };
    },
  };
}
