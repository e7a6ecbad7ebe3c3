// Conformance, keep-alive pings (docs/connections.md): every provider with `keepalive: {enabled, window: 1s}`. A
// client request opens the connection's window; right after it ends the connection is pinged with the smallest
// request of its format (one user turn, max tokens 1), recorded as its own row (kind and endpoint `keepalive`, the
// connection named, the provider's usage), counted in tollgate_keepalive_pings_total and not as a client request.
// A gateway of its own: pings take the fakes' next behaviours, so they must not meet the other files' scripts.

import t from 'tap';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';
import { chat, send } from './clients.js';
import { answered, eachProvider, startSuite, type Row } from './suite.js';

const suite = await startSuite(t, { tune: (_p, row) => ({ ...row, keepalive: { enabled: true, window: '1s' } }) });
const { gw } = suite;

eachProvider(t, suite, 'keepalive', async (t, p, up) => {
  const before = up.received.length;
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: false });
  answered(t, r);
  let ping: Row | undefined;
  await waitFor(async () => ([ping] = await gw.rows(`provider = '${p.id}' AND kind = 'keepalive'`)).length > 0 && ping !== undefined, 15_000);
  t.match(ping, { kind: 'keepalive', endpoint: 'keepalive', connection: 'default', model: `${p.id}/${p.models.main}`, api_key_name: '', status: 'success' }, 'the ping row');
  t.ok(Number(ping!.total_tokens) > 0, 'with the provider\'s usage');
  if (!p.inProcess) {
    const sent = up.received.slice(before + 1);
    t.ok(sent.length >= 1, 'the upstream received the ping');
    t.equal(p.keyOf(sent[0]!.headers), p.key, 'with the provider key');
    t.ok(Number(p.maxTokensOf(sent[0]!.body)) <= 16, `the smallest answer (max tokens ${String(p.maxTokensOf(sent[0]!.body))})`);
  }
  const m = await gw.metrics();
  t.ok(metricValue(m, 'tollgate_keepalive_pings_total', { provider: p.id, status: 'success' }) >= 1, 'tollgate_keepalive_pings_total');
  t.equal(metricValue(m, 'tollgate_requests_total', { provider: p.id }), 1, 'pings are not client requests');
});
