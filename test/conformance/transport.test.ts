// Conformance, the transport: a refused connection (502 TOLLGATE_ERR_UPSTREAM_CONNECT), a connect timeout (a TLS
// handshake to a server that never answers: 504 TOLLGATE_ERR_UPSTREAM_TIMEOUT), no response headers within
// request_s (whole) / stall_s (stream) (504), a stream that stalls after its first delta (the error event
// TOLLGATE_ERR_UPSTREAM_STALL after 200), and a client that goes away before the headers (row aborted, 499) or
// mid-stream (aborted, 200, the output estimated). Every row: timeouts connect_s 2 (0.5 for the silent server),
// stall_s 1, request_s 1. Requests are OpenAI Chat clients'.

import t, { type Test } from 'tap';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { waitFor } from '../helpers/wait.js';
import { chat, send } from './clients.js';
import { PROVIDERS, type Json } from './providers.js';
import { eachProvider, rowOf, startSuite, type Row } from './suite.js';

// A TCP server that accepts and never answers: a TLS handshake to it never completes.
const silent = createServer(() => undefined);
const sockets = new Set<Socket>();
silent.on('connection', (s) => sockets.add(s));
await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => {
  for (const s of sockets) s.destroy();
  silent.close(() => r());
}));
const silentOrigin = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`;

const rows: Record<string, Json> = {};
for (const p of PROVIDERS) {
  if (p.unsupported.refused === undefined) rows[`${p.id}-dead`] = p.rowAt('http://127.0.0.1:9');
  if (p.unsupported['connect-timeout'] === undefined) rows[`${p.id}-slow`] = p.rowAt(silentOrigin, { timeouts: { connect_s: 0.5, stall_s: 1, request_s: 1 } });
}
const suite = await startSuite(t, { rows });
const { gw } = suite;

const errorCode = (text: string): unknown => (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;

async function gatewayError(t: Test, model: string, stream: boolean, status: number, code: string): Promise<{ row: Row; ms: number }> {
  const r = await send(gw.url, chat, { model, stream });
  t.equal(r.status, status, `stream=${stream}: ${status} before any byte`);
  t.equal(errorCode(r.text), code, `stream=${stream}: ${code}`);
  const row = await rowOf(gw, r.requestId);
  t.match(row, { status: 'failure', http_status: status, error_type: code, usage_source: 'none', total_tokens: 0, stream }, `stream=${stream}: the row`);
  return { row, ms: r.ms };
}

eachProvider(t, suite, 'refused', async (t, p) => {
  for (const stream of [false, true]) await gatewayError(t, `${p.id}-dead/${p.models.main}`, stream, 502, 'TOLLGATE_ERR_UPSTREAM_CONNECT');
});

eachProvider(t, suite, 'connect-timeout', async (t, p) => {
  const { ms } = await gatewayError(t, `${p.id}-slow/${p.models.main}`, false, 504, 'TOLLGATE_ERR_UPSTREAM_TIMEOUT');
  t.ok(ms >= 400 && ms < 5000, `ended by the 0.5 s connect timeout (${ms} ms)`);
});

eachProvider(t, suite, 'headers-timeout', async (t, p, up) => {
  for (const stream of [false, true]) {
    const { ms } = await gatewayError(t, up.delayed(), stream, 504, 'TOLLGATE_ERR_UPSTREAM_TIMEOUT');
    t.ok(ms >= 900 && ms < 1900, `stream=${stream}: ended by the 1 s ${stream ? 'stall_s' : 'request_s'} (${ms} ms)`);
  }
});

eachProvider(t, suite, 'stall', async (t, p, up) => {
  const r = await send(gw.url, chat, { model: up.stalling(), stream: true });
  t.equal(r.status, 200, 'the stream had started');
  t.ok(r.ms >= 900 && r.ms < 5000, `ended by the 1 s stall timeout (${r.ms} ms)`);
  const a = chat.parse(r.text, true);
  t.equal(a.text, 'Hello', 'the delta before the stall');
  t.equal(a.end, 'error', 'then the error event');
  t.match(r.text, /"code":"TOLLGATE_ERR_UPSTREAM_STALL"/);
  const row = await rowOf(gw, r.requestId);
  t.match(row, { status: 'failure', http_status: 200, error_type: 'TOLLGATE_ERR_UPSTREAM_STALL', usage_source: p.cutUsage });
  t.ok(Number(row.output_tokens) > 0, 'the output streamed is counted');
});

eachProvider(t, suite, 'abort-before-headers', async (t, p, up) => {
  for (const stream of [false, true]) {
    const hangups = up.aborted;
    const ac = new AbortController();
    const { path, body } = chat.build({ model: up.delayed(), stream });
    const pending = request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    await t.rejects(pending, `stream=${stream}: the client went away`);
    let row: Row | undefined;
    await waitFor(async () => ([row] = await gw.rows(`provider = '${String(body.model).split('/')[0]}' AND status = 'aborted' AND stream = ${stream}`)).length > 0 && row !== undefined, 15_000);
    t.match(row, { status: 'aborted', http_status: 499, error_type: 'client_closed', stream }, `stream=${stream}: aborted, 499`);
    // The upstream never accepted the request (no 2xx yet), so nothing is estimated (recording.md, Estimated usage).
    t.equal(row!.usage_source, 'none', `stream=${stream}: no usage`);
    if (!p.inProcess) await waitFor(() => up.aborted > hangups);
    t.pass(p.inProcess ? 'in process: nothing upstream to hang up on' : 'the upstream saw the gateway hang up');
  }
});

eachProvider(t, suite, 'abort-mid-stream', async (t, p, up) => {
  const hangups = up.aborted;
  const ac = new AbortController();
  const { path, body } = chat.build({ model: up.stalling(), stream: true });
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
  const id = String(res.headers['x-request-id']);
  let seen = '';
  await t.rejects(
    (async () => {
      for await (const c of res.body) {
        seen += String(c);
        if (/"content":"[^"]+"/.test(seen)) ac.abort();
      }
    })(),
    'the client went away after the first delta',
  );
  const row = await rowOf(gw, id);
  t.match(row, { status: 'aborted', http_status: 200, error_type: 'client_closed', stream: true, usage_source: p.cutUsage });
  t.ok(Number(row.output_tokens) > 0 && Number(row.input_tokens) > 0, 'input and the output seen are counted');
  if (!p.inProcess) await waitFor(() => up.aborted > hangups);
  t.pass(p.inProcess ? 'in process: nothing upstream to hang up on' : 'the upstream saw the gateway hang up');
});
