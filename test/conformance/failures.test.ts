// Conformance, an upstream that fails: a stream cut after its first delta (the client gets its format's terminal
// error; the row is a failure whose missing usage is estimated), an error inside the stream, a 2xx body that is not
// JSON (200 with HTML, and an HTML error status). The error-status table is status-table.test.ts. Requests are
// OpenAI Chat clients'.

import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chat, send } from './clients.js';
import { PROVIDERS, type Json } from './providers.js';
import { eachProvider, rowOf, startSuite } from './suite.js';

/** An upstream that answers every request with `status` and an HTML body (what a proxy in front of it sends). */
async function startHtml(status: number): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'text/html' });
      res.end('<html><body>upstream proxy says no</body></html>');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const html200 = await startHtml(200);
const html502 = await startHtml(502);
const rows: Record<string, Json> = {};
for (const p of PROVIDERS) {
  if (p.unsupported['not-json'] !== undefined) continue;
  rows[`${p.id}-html`] = p.rowAt(html200);
  rows[`${p.id}-html502`] = p.rowAt(html502);
}
const suite = await startSuite(t, { rows });
const { gw } = suite;
const CUT_CODES = ['TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'TOLLGATE_ERR_UPSTREAM_CONNECT'];

eachProvider(t, suite, 'truncated', async (t, p, up) => {
  up.script({ kind: 'cut' });
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: true });
  t.equal(r.status, 200, 'the stream had started');
  const a = chat.parse(r.text, true);
  t.equal(a.text, 'Hello', 'the delta sent before the cut reached the client');
  t.equal(a.end, 'error', 'the client gets the error event');
  t.notMatch(r.text, /\[DONE\]/, 'and no [DONE]');
  const row = await rowOf(gw, r.requestId);
  t.match(row, { status: 'failure', http_status: 200, stream: true });
  t.ok(CUT_CODES.includes(String(row.error_type)), `error_type ${String(row.error_type)}`);
  t.equal(row.usage_source, p.cutUsage, `usage_source ${p.cutUsage}`);
  t.ok(Number(row.output_tokens) > 0 && Number(row.input_tokens) > 0, 'input and output counted');
  t.ok(Number(row.cost) > 0, 'and priced');
});

eachProvider(t, suite, 'stream-error', async (t, p, up) => {
  up.script({ kind: 'stream-error' });
  const r = await send(gw.url, chat, { model: `${p.id}/${p.models.main}`, stream: true });
  t.equal(r.status, 200);
  const a = chat.parse(r.text, true);
  t.equal(a.text, 'Hello', 'the delta before the error');
  t.equal(a.end, 'error', 'the error event');
  t.notMatch(r.text, /\[DONE\]/);
  const row = await rowOf(gw, r.requestId);
  t.match(row, { status: 'failure', http_status: 200, error_type: 'upstream_stream_error', usage_source: p.cutUsage });
  t.ok(Number(row.output_tokens) > 0, 'the output streamed is counted');
});

eachProvider(t, suite, 'not-json', async (t, p) => {
  const whole = await send(gw.url, chat, { model: `${p.id}-html/${p.models.main}`, stream: false });
  t.equal(whole.status, 502, 'a 200 whose body is not the format is a 502');
  t.match(JSON.parse(whole.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' } }, 'in the gateway\'s error shape');
  t.match(await rowOf(gw, whole.requestId), { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', usage_source: 'none', total_tokens: 0 });

  // Streamed: every path answers 502 before any byte (docs/routing.md: headers go out with the first rendered event).
  const r = await send(gw.url, chat, { model: `${p.id}-html/${p.models.main}`, stream: true });
  t.equal(r.status, 502, 'a 200 that is not an event stream is a 502 before any byte');
  t.match(r.text, /"code":"TOLLGATE_ERR_UPSTREAM_PROTOCOL"/, 'the client gets TOLLGATE_ERR_UPSTREAM_PROTOCOL');
  t.notMatch(r.text, /upstream proxy says no|\[DONE\]/, 'none of the HTML, no [DONE]');
  t.match(await rowOf(gw, r.requestId), { status: 'failure', http_status: r.status, error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', usage_source: 'none', total_tokens: 0 });

  const html = await send(gw.url, chat, { model: `${p.id}-html502/${p.models.main}`, stream: false });
  t.equal(html.status, 502, 'an HTML error status is relayed');
  t.match(html.text, /upstream proxy says no/, 'with its body');
  t.match(await rowOf(gw, html.requestId), { status: 'failure', http_status: 502, error_type: '502', usage_source: 'none' });
});

