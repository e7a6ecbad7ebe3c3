// Conformance, the error-status table of docs/errors.md and docs/routing.md against every provider: the client gets
// the upstream's status, body and retry headers (retry-after, retry-after-ms); the row is a failure with the status
// as error_type and no usage (null buckets, usage_source none); the connection cools down
// (tollgate_cooldowns_total by reason: the status, or quota_exhausted for a 402 and for quota words) except on a
// 400. Every status is asked for whole, and the retry and overload ones streamed too (a refused stream is a plain
// error answer: nothing was streamed yet). Requests are OpenAI Chat clients'.

import t from 'tap';
import { metricValue } from '../helpers/prom.js';
import { chat, send } from './clients.js';
import { bucketsOf, eachProvider, rowOf, startSuite } from './suite.js';

const suite = await startSuite(t);
const { gw } = suite;

interface StatusCase {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string>;
  /** The cooldown reason, or null: no cooldown. */
  readonly cools: string | null;
  /** Asked for streamed too. */
  readonly stream?: boolean;
}
const STATUSES: StatusCase[] = [
  { status: 400, message: 'bad request from the provider', cools: null },
  { status: 401, message: 'invalid api key', cools: '401', stream: true },
  { status: 403, message: 'permission denied', cools: '403' },
  { status: 402, message: 'payment required', cools: 'quota_exhausted' },
  { status: 429, message: 'You exceeded your current quota, please check your plan and billing details.', cools: 'quota_exhausted' },
  { status: 408, message: 'request timeout', cools: '408' },
  { status: 500, message: 'internal error', cools: '500' },
  { status: 503, message: 'overloaded', cools: '503', stream: true },
  { status: 429, message: 'rate limited', headers: { 'retry-after': '7' }, cools: '429' },
  { status: 429, message: 'rate limited', headers: { 'retry-after-ms': '1500' }, cools: '429', stream: true },
];

eachProvider(t, suite, 'status-table', async (t, p, up) => {
  for (const c of STATUSES) {
    for (const stream of c.stream ? [false, true] : [false]) {
      const label = `${c.status} ${c.message.slice(0, 20)} stream=${stream}`;
      const before = await gw.metrics();
      up.script({ kind: 'error', status: c.status, message: c.message, ...(c.headers ? { headers: c.headers } : {}) });
      const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream });
      t.equal(r.status, c.status, `${label}: the upstream's status`);
      t.ok(r.text.includes(c.message), `${label}: the upstream's body`);
      for (const [k, v] of Object.entries(c.headers ?? {})) t.equal(r.headers[k], v, `${label}: ${k} relayed`);
      const row = await rowOf(gw, r.requestId);
      t.match(row, { status: 'failure', http_status: c.status, error_type: String(c.status), usage_source: 'none', total_tokens: 0 }, `${label}: row`);
      t.same(bucketsOf(row), [null, null, null, null, null], `${label}: not reported is null`);
      const after = await gw.metrics();
      const grew = (reason?: string) =>
        metricValue(after, 'tollgate_cooldowns_total', { provider: p.id, ...(reason ? { reason } : {}) }) - metricValue(before, 'tollgate_cooldowns_total', { provider: p.id, ...(reason ? { reason } : {}) });
      if (c.cools === null) t.equal(grew(), 0, `${label}: no cooldown`);
      else t.equal(grew(c.cools), 1, `${label}: a cooldown, reason ${c.cools}`);
    }
  }
});
