// A clean stop is bounded: one client that stops reading a stream (its socket full, never closed) held app.close()
// for ever, until a supervisor's SIGKILL recorded the request `interrupted` with none of what it had been sent. Past
// server.shutdown_timeout_s the connections still open are closed; the request is recorded as an abort cut by the
// stop (error type `shutdown`) with the output streamed so far, and the stop goes on (src/pipeline/drain.ts).

import t from 'tap';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';
import { tempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/client.js';

// An upstream that streams chat chunks for as long as it is read, honouring back-pressure (as a model writing a very
// long answer does): the gateway's writes to a client that stopped reading back up to it.
const up = await listenLoopback(t, async (req, res) => {
  for await (const _ of req) { /* the request body */ }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'word ' }, finish_reason: null }] })}\n\n`;
  while (!res.destroyed) if (!res.write(chunk)) await new Promise((r) => { res.once('drain', r); res.once('close', r); });
}, (err, res) => res.writeHead(500).end(String(err)));

const dataDir = tempDir(t);
const gw = await startApp(t, {
  server: { shutdown_timeout_s: 1 },
  providers: { up: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${up.port}/v1`, price: { input: 1, output: 2 }, models: { m: {} } } },
}, { dataDir });

t.test('a client that stops reading does not hold the stop past its deadline, and its request is recorded', async (t) => {
  const port = Number(new URL(gw.url).port);
  const body = JSON.stringify({ model: 'up/m', stream: true, messages: [{ role: 'user', content: 'a long answer' }] });
  const s = connect(port, '127.0.0.1');
  t.teardown(() => s.destroy());
  await new Promise((r) => s.once('connect', r));
  let got = 0;
  const firstBytes = new Promise<void>((resolve) => s.on('data', (d: Buffer) => {
    got += d.length;
    if (got > 4096) {
      s.pause(); // reads no more, and never closes
      resolve();
    }
  }));
  s.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  await firstBytes;
  await sleep(300); // the gateway's writes back up
  const t0 = Date.now();
  const closed = gw.app.close().then(() => 'closed' as const);
  const outcome = await Promise.race([closed, sleep(10_000).then(() => 'still waiting' as const)]);
  t.equal(outcome, 'closed', 'the stop ended');
  const took = Date.now() - t0;
  t.ok(took >= 900 && took < 8000, `after about the deadline (1 s), not for ever: ${took} ms`);

  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: dataDir, username: 'default', password: '' });
  t.teardown(() => store.close());
  const rows = await store.query<Record<string, unknown>>(`SELECT status, http_status, error_type, output_tokens FROM ${store.t('requests')} FINAL`);
  t.equal(rows.length, 1, 'one row');
  t.match(rows[0], { status: 'aborted', http_status: 200, error_type: 'shutdown' }, 'an abort the stop cut, not a client that left, not interrupted');
  t.ok(Number(rows[0]!.output_tokens) > 0, `the output streamed so far is counted: ${String(rows[0]!.output_tokens)}`);
});
