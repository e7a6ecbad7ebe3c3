// A client that goes away while its body is still arriving (the socket closed after part of a declared length, a
// chunked body never finished) is recorded `aborted`, 499 `client_closed`, as a client that leaves later is, and
// logged at info: no error of the gateway's. Before, it was recorded and logged as a 500 TOLLGATE_ERR_INTERNAL
// with the ECONNRESET stack at error level, so any client could raise the gateway's 5xx rate and its error alerts.
// And a request refused before its handler (bad JSON, wrong content type) carries the `x-request-id` of the row it
// was recorded as, as every other data-plane answer does (before, only the body's `request_id` said it).

import t from 'tap';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { DEMO_PROVIDER } from '../helpers/app.js';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { testConfig } from '../helpers/app.js';
import { memoryTracing } from '../helpers/spans.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

// The app with its log captured, to see at which level the abandoned bodies are told.
const lines: { level: number; msg: string; code?: string }[] = [];
const stream = new Writable({ write: (c: Buffer, _e, cb) => void (lines.push(JSON.parse(c.toString('utf8')) as (typeof lines)[number]), cb()) });
const { provider } = memoryTracing();
const app = await build({
  config: new ConfigHolder(testConfig({ providers: { demo: DEMO_PROVIDER } }, tempDir(t))),
  tracerProvider: provider, logger: { level: 'info', stream }, processMetrics: false,
});
await app.listen({ host: '127.0.0.1', port: 0 });
t.teardown(() => app.close());
await app.tollgate.storeReady;
const port = (app.server.address() as { port: number }).port;

const rows = async () => (await app.tollgate.store.query<Record<string, unknown>>(`SELECT status, http_status, error_type, endpoint FROM ${app.tollgate.store.t('requests')} FINAL ORDER BY ts, request_id`));
const requestsTotal = async (status: string) => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^tollgate_requests_total\\{[^}]*status="${status}"[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
};

/** Write `head` and part of a body, then close the socket without waiting for an answer. */
function abandon(head: string, part: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(head + part, () => setTimeout(() => s.destroy(), 50));
    });
    s.on('close', () => resolve());
    s.on('error', reject);
  });
}

const cases: [string, string, string][] = [
  ['a declared length never reached', 'POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n', '{"model":"demo/echo-1",'],
  ['a chunked body never finished', 'POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n', '10\r\n{"model":"demo/e\r\n'],
];
for (const [name, head, part] of cases) {
  t.test(`${name}: recorded aborted (499 client_closed), told at info, not as an internal error`, async (t) => {
    const before = { rows: (await rows()).length, aborted: await requestsTotal('aborted'), failures: await requestsTotal('failure'), lines: lines.length };
    await abandon(head, part);
    await waitFor(async () => {
      await app.tollgate.writer.flush();
      return (await rows()).length > before.rows;
    }, 5000);
    const all = await rows();
    t.equal(all.length, before.rows + 1, 'one row');
    t.match(all.at(-1), { status: 'aborted', http_status: 499, error_type: 'client_closed' });
    t.equal(await requestsTotal('aborted'), before.aborted + 1, 'counted aborted');
    t.equal(await requestsTotal('failure'), before.failures, 'not counted a failure');
    const told = lines.slice(before.lines);
    t.ok(told.some((l) => l.code === 'client_closed' && l.level === 30), 'told at info');
    t.notOk(told.some((l) => l.level >= 50), 'nothing at error level');
  });
}

t.test('a request refused before its handler carries the x-request-id of its row', async (t) => {
  for (const [body, type, code] of [['{"model":', 'application/json', 'TOLLGATE_ERR_INVALID_JSON'], ['hello', 'text/plain', 'TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE']]) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': type! }, body });
    const answer = (await res.json()) as { error: { code: string; request_id: string } };
    t.equal(answer.error.code, code);
    t.equal(res.headers.get('x-request-id'), answer.error.request_id, `${code}: the header names the row`);
  }
});

// A client that hangs up while the body of a request to a path with no route is arriving (`POST /v1/embeddings`,
// which the Gemini wildcard takes; a path nothing takes) is a client that left, as on any other route: told at info as
// `client_closed`, never as the 404 nobody was there to read. Before, the wildcard's hangup was logged as
// TOLLGATE_ERR_NOT_FOUND (the error handler put the route's 404 in place of the hangup).
for (const path of ['/v1/embeddings', '/v1beta/models/nothing-here', '/no/such/path']) {
  t.test(`a hangup on ${path}, a path with no route: told as client_closed, not as a 404`, async (t) => {
    await app.tollgate.writer.flush();
    const before = { rows: (await rows()).length, lines: lines.length };
    await abandon(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n`, '{"input":');
    await waitFor(() => lines.slice(before.lines).some((l) => l.code !== undefined && l.code !== 'TOLLGATE_ERR_BAD_REQUEST'), 5000);
    // (The HTTP parser's 400 for a body cut short by the FIN is written for a client that may still read: errors.md.)
    const told = lines.slice(before.lines).filter((l) => l.code !== 'TOLLGATE_ERR_BAD_REQUEST').map((l) => ({ level: l.level, code: l.code }));
    t.same(told, [{ level: 30, code: 'client_closed' }], 'the request told as the hangup, at info, and not as a 404');
    await app.tollgate.writer.flush();
    t.equal((await rows()).length, before.rows, 'no row: no model call');
  });
}
