// A request that never reached its provider opens no keep-alive window (docs/connections.md: pings start only after a
// first upstream call). Refused before its call (n: 2 to an Anthropic provider: 400 TOLLGATE_ERR_NOT_SUPPORTED) or
// whose connection was never made (nothing listens on the port), its row has a connection but `dispatched` false: the
// connection, never used, is not pinged when such a "window" would end; and the window's recovery from ClickHouse at a
// start opens windows only from calls that went out, while a ping that did not still counts as a try.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { fakeProvider } from '../helpers/fake-openai.js';
import { freePort } from '../helpers/net.js';
import { callsOfConnections } from '../../src/store/keepalive.js';
import { UnstoredCalls, windowOfRecord } from '../../src/services/keepalive-window.js';

const an = await startFakeAnthropic(t);
const gw = await startApp(t, {
  providers: {
    an: fakeAnthropicProvider(an.url, { group: 'subscription', keepalive: { enabled: true, window: '2s' } }),
    dead: fakeProvider(`http://127.0.0.1:${await freePort()}/v1`, { group: 'subscription', models: { m: { kind: 'llm' } }, keepalive: { enabled: true, window: '2s' } }),
  },
});

const chat = async (body: Record<string, unknown>): Promise<number> => {
  const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }) });
  await r.arrayBuffer();
  return r.status;
};

t.test('no ping for a connection whose only requests never went out', async (t) => {
  t.equal(await chat({ model: 'an/claude-sonnet-4-5', n: 2 }), 400, 'refused before the call');
  t.equal(await chat({ model: 'dead/m' }), 502, 'the connection refused');
  // Two windows of 2 s, then the rows: a ping would have been sent right after the first ended.
  await new Promise((r) => setTimeout(r, 4500));
  await gw.flush();
  const rows = await gw.rows(`provider IN ('an', 'dead')`);
  t.same(rows.map((r) => [r.provider, r.kind, r.connection, r.dispatched]).sort(), [['an', 'request', 'default', false], ['dead', 'request', 'default', false]], 'the two rows, a connection each, not dispatched; no keepalive row');
  t.equal(an.received.length, 0, 'nothing reached the provider, no ping either');
  const calls = await callsOfConnections(gw.app.tollgate.store, [{ provider: 'an', connection: 'default', from: 0 }, { provider: 'dead', connection: 'default', from: 0 }]);
  t.same(calls.map((c) => c.map((r) => [r.kind, r.dispatched])), [[['request', false]], [['request', false]]], 'a start recovering the windows reads each call, saying it did not go out');
  for (const [i, id] of ['an#default', 'dead#default'].entries()) {
    const { window } = windowOfRecord({ calls: calls[i]!, unstored: new UnstoredCalls(), id, connection: 'default', from: 0, windowMs: 2000 });
    t.equal(window, null, `${id}: and opens no window from it`);
  }
});

t.test('a ping that never went out still counts as a try (the claim key after a restart), though it opens no window', async (t) => {
  // A request opened a window at 0; its ping at 2100 found the upstream down (connection refused: not dispatched).
  const calls = [
    { t: 0, kind: 'request' as const, status: 'success' as const, dispatched: true },
    { t: 2100, kind: 'keepalive' as const, status: 'failure' as const, dispatched: false },
  ];
  const { window, pings } = windowOfRecord({ calls, unstored: new UnstoredCalls(), id: 'p#k', connection: 'k', from: 0, windowMs: 2000 });
  t.same(window, { start: 0, end: 2000, prevEnd: -Infinity }, 'the window the request opened');
  t.same(pings, [2100], 'the failed ping is a try: a restarted gateway does not take the key its last process won');
});
