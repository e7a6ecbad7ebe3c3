// Clients that stop reading their streams, and requests queued behind a provider's busy connections (a review of
// streaming under pressure): with `connections: N`, N clients that opened long streams and read nothing held every
// connection to the provider for as long as they kept their sockets, and one more request of the same provider
// waited with no deadline (no status line after 20 s). Now a client that reads nothing for the route's
// `timeouts.stall_s` is let go (its row `aborted` / `client_stalled`, the upstream call closed), and a request sent
// while every connection is busy gets the documented 504 when its response has not started within that time.
// Real sockets: a fake OpenAI upstream that streams fast, raw TCP clients that never read.

import t from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { startApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

t.setTimeout(60_000);

interface Call { res: ServerResponse; closed: boolean }
const calls: Call[] = [];
let mode: 'flood' | 'trickle' | 'one-frame' = 'flood';
const WORD = JSON.stringify('w'.repeat(4000));
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const call: Call = { res, closed: false };
    calls.push(call);
    res.on('close', () => (call.closed = true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${WORD}},"finish_reason":null}]}\n\n`;
    if (mode === 'one-frame') {
      // one 6 MB frame (a large delta: a base64 image), the usage and the end, all at once: the upstream is done at once
      const big = JSON.stringify('x'.repeat(6_000_000));
      res.write(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${big}},"finish_reason":null}]}\n\n`);
      res.end('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}\n\ndata: [DONE]\n\n');
      return;
    }
    if (mode === 'trickle') {
      // a stream that moves, slowly, for ever: it holds its connection without stalling
      const timer = setInterval(() => res.write(chunk), 200);
      res.on('close', () => clearInterval(timer));
      return;
    }
    // 20 MB as fast as the socket takes it, then the end: more than loopback's buffers hold for a client that does not read
    let sent = 0;
    const pump = () => {
      while (sent < 5000) {
        sent++;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end('data: [DONE]\n\n');
    };
    pump();
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
t.teardown(() => new Promise<void>((r) => { upstream.closeAllConnections(); upstream.close(() => r()); }));
const base = `http://127.0.0.1:${(upstream.address() as { port: number }).port}/v1`;

const gw = await startApp(t, {
  providers: {
    oa: { group: 'paid', format: 'openai', base_url: base, auth: { type: 'api_key', key: 'sk-test-0123456789' }, price: { input: 1, output: 1 }, connections: 2, timeouts: { stall_s: 1 }, models: { m: { kind: 'llm' } } },
    // the slow reader's: TCP shows a reader's progress in steps (the window reopens after a good part of it is read)
    slow: { group: 'paid', format: 'openai', base_url: base, auth: { type: 'api_key', key: 'sk-test-0123456789' }, price: { input: 1, output: 1 }, timeouts: { stall_s: 3 }, models: { m: { kind: 'llm' } } },
  },
});
const port = Number(new URL(gw.url).port);
const body = JSON.stringify({ model: 'oa/m', stream: true, messages: [{ role: 'user', content: 'hi' }] });

/** A client that sends a streaming request and then reads nothing (its socket stays open, paused). */
function nonReader(): Socket {
  const s = connect(port, '127.0.0.1', () => s.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
  s.pause();
  s.on('error', () => undefined);
  t.teardown(() => s.destroy());
  return s;
}

/** A client that reads its whole answer: status, bytes, time taken. */
async function reader(): Promise<{ status: number; bytes: number; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const bytes = (await res.arrayBuffer()).byteLength;
  return { status: res.status, bytes, ms: Date.now() - t0 };
}

t.test('clients that stop reading are let go after stall_s, and free the connections', async (t) => {
  mode = 'flood';
  const before = calls.length;
  nonReader();
  nonReader();
  await waitFor(() => calls.length === before + 2, 5000);
  // sent once the two have filled the sockets' buffers, so that their stall time runs out before this one's wait
  await new Promise((r) => setTimeout(r, 500));
  const other = await reader();
  t.equal(other.status, 200, 'a third client of the provider is answered');
  t.ok(other.bytes > 20_000_000, `its whole stream (${other.bytes} bytes)`);
  await waitFor(() => calls.slice(before, before + 2).every((c) => c.closed), 5000);
  t.pass('the two stalled streams\' upstream calls were closed');
  const rows = await gw.rows("api_key_name = 'anonymous'");
  const mine = rows.slice(-3).map((r) => `${String(r.status)}/${String(r.error_type)}`).sort();
  t.same(mine, ['aborted/client_stalled', 'aborted/client_stalled', 'success/'], 'the stalled clients are recorded as let go');
});

t.test('a request queued behind busy connections gets a 504 after stall_s, not an endless wait', async (t) => {
  mode = 'trickle';
  const open = calls.length;
  // two readers whose streams move for ever hold both connections
  const holders = [0, 1].map(() => new AbortController());
  for (const h of holders) void fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: h.signal }).then((r) => r.arrayBuffer()).catch(() => undefined);
  t.teardown(() => holders.forEach((h) => h.abort()));
  await waitFor(() => calls.length === open + 2, 5000);
  const queued = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
  const answer = (await queued.json()) as { error?: { code?: string; message?: string } };
  t.equal(queued.status, 504, 'the documented timeout');
  t.match(answer.error, { code: 'TOLLGATE_ERR_UPSTREAM_TIMEOUT', message: /all 2 of its connections .* busy for 1 s/ });
  t.equal(calls.length, open + 2, 'the queued request never reached the upstream');
  const [row] = await gw.rows('http_status = 504');
  t.match(row, { status: 'failure', error_type: 'TOLLGATE_ERR_UPSTREAM_TIMEOUT', provider: 'oa' }, 'its row');
  holders.forEach((h) => h.abort());
});

t.test('a client that reads slowly is not cut; one that reads nothing is recorded as let go, though the upstream had finished', async (t) => {
  // (a review of the evening's fixes: the stall was counted from the write, not from the client's last read, so a
  // client reading 1 MB/s got 5.4 of 6 MB and the row said success; a let-go stream whose upstream had finished kept
  // its success row too)
  mode = 'one-frame';
  const slowBody = body.replace('oa/m', 'slow/m');
  const slow = connect(port, '127.0.0.1', () => slow.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(slowBody)}\r\n\r\n${slowBody}`));
  t.teardown(() => slow.destroy());
  let received = 0;
  slow.pause();
  const reading = setInterval(() => {
    for (let chunk = slow.read(); chunk !== null; chunk = slow.read()) received += (chunk as Buffer).length;
  }, 50);
  // at most ~64 KB a read every 50 ms: about 1.3 MB/s, so the 6 MB frame takes longer than the 3 s stall_s
  const closed = new Promise((r) => slow.once('close', r));
  const still = nonReader();
  await closed;
  clearInterval(reading);
  t.ok(received > 6_000_000, `the slow reader got the whole answer (${received} bytes)`);
  still.destroy();
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows("api_key_name = 'anonymous' AND model IN ('slow/m', 'oa/m') AND ts > now() - INTERVAL 30 SECOND")).length >= 2, 10_000);
  const statuses = rows.slice(-2).map((r) => `${String(r.status)}/${String(r.error_type)}`).sort();
  t.same(statuses, ['aborted/client_stalled', 'success/'], `the slow reader's row a success, the non-reader's let go (${statuses.join(', ')})`);
});
