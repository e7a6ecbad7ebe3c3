// GET /api/live (src/api/live.ts) and the in-flight gauges (src/telemetry/live.ts) against a real app and a slow
// streaming fake upstream: a streamed request appears once, is pushed at least twice a second while it runs, and
// leaves when its record is published; a combo is one entry (its attempts are not client requests); the gauges
// agree; a client that goes away is let go; the stream ends when the app closes.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

interface Live {
  request_id: string;
  model: string;
  combo: string | null;
  stream: boolean;
  duration_s: number;
  streamed_tokens: number;
  estimated_total: number | null;
  cost_so_far: number;
}
interface Frame {
  at: number;
  requests: Live[];
}

const fake = await startFakeOpenAI(t);
const gw = await startApp(t, {
  providers: { fake: fakeProvider(fake.baseUrl) },
  combos: { pair: { strategy: 'fallback', models: ['fake/gpt-4o'] } },
});

/** Read /api/live until `stop` aborts: every `inflight` event with the time it arrived. */
async function watch(signal: AbortSignal, frames: Frame[], comments: string[]): Promise<Response> {
  const res = await fetch(`${gw.url}/api/live`, { signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) !== -1) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          if (frame.startsWith(':')) comments.push(frame);
          const data = /^event: inflight\ndata: (.*)$/s.exec(frame);
          if (data) frames.push({ at: Date.now(), requests: (JSON.parse(data[1]!) as { requests: Live[] }).requests });
        }
      }
    } catch {
      // aborted
    }
  })();
  return res;
}

const chat = (model: string) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, stream: true, max_tokens: 100, messages: [{ role: 'user', content: 'slowly' }] }) });

t.test('a slow stream: listed once while it runs, pushed at least twice a second, gone when it ends', async (t) => {
  const stop = new AbortController();
  const frames: Frame[] = [];
  const res = await watch(stop.signal, frames, []);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  await waitFor(() => frames.length >= 1);
  t.same(frames[0]!.requests, [], 'nothing in flight at first');
  fake.next({ kind: 'ok', words: Array.from({ length: 12 }, (_, i) => ` w${i}`), chunkDelayMs: 150 });
  const started = Date.now();
  const answer = await chat('fake/gpt-4o');
  await waitFor(() => frames.some((f) => f.requests.length === 1));
  const metrics = await gw.metrics();
  t.equal(metricValue(metrics, 'tollgate_inflight_requests', {}), 1, 'the gauge counts it');
  t.ok(metricValue(metrics, 'tollgate_inflight_tokens', {}) >= 0);
  await answer.text();
  const ended = Date.now();
  await waitFor(() => frames.at(-1)!.requests.length === 0);
  stop.abort();
  const during = frames.filter((f) => f.requests.length === 1);
  const ids = new Set(during.map((f) => f.requests[0]!.request_id));
  t.equal(ids.size, 1, 'one request, one id');
  const entry = during.at(-1)!.requests[0]!;
  t.match(entry, { model: 'fake/gpt-4o', combo: null, stream: true });
  t.ok(entry.duration_s > 0.5, `its duration grows (${entry.duration_s} s)`);
  const tokens = during.map((f) => f.requests[0]!.streamed_tokens);
  t.ok(tokens.every((n, i) => i === 0 || n >= tokens[i - 1]!), `tokens streamed only grow: ${tokens.join(' ')}`);
  t.ok(tokens.at(-1)! > tokens[0]!, 'and they do grow while it runs');
  t.equal(entry.estimated_total, 100, 'against the request\'s max_tokens');
  t.ok(entry.cost_so_far > 0, `cost so far ${entry.cost_so_far}`);
  // ~1.8 s of stream: at 400 ms a tick, at least 2 frames in every second of it.
  const seconds = (ended - started) / 1000;
  t.ok(during.length >= Math.floor(seconds) * 2, `${during.length} frames in ${seconds.toFixed(1)} s`);
  const [row] = await gw.rows();
  t.equal(row!.request_id, entry.request_id, 'the id of its row');
  t.equal(metricValue(await gw.metrics(), 'tollgate_inflight_requests', {}), 0, 'the gauge is back to 0');
});

t.test('a combo request is one entry, not one per attempt', async (t) => {
  const stop = new AbortController();
  const frames: Frame[] = [];
  await watch(stop.signal, frames, []);
  fake.next({ kind: 'ok', words: [' a', ' b', ' c', ' d', ' e', ' f'], chunkDelayMs: 150 });
  const answer = await chat('pair');
  await waitFor(() => frames.some((f) => f.requests.length > 0));
  await answer.text();
  await waitFor(() => frames.at(-1)!.requests.length === 0);
  stop.abort();
  const seen = frames.flatMap((f) => f.requests);
  t.equal(new Set(seen.map((r) => r.request_id)).size, 1, 'one entry: the attempt is not listed');
  // The snapshot is the record as it stands: the combo is known once the target is resolved.
  t.match(seen.at(-1), { combo: 'pair', requested_model: 'pair', stream: true });
});

t.test('a subscriber that does not read is not buffered for: it gets the list as it is once it reads', async (t) => {
  // Before, every list was written whatever the socket held: a reader that never reads made the gateway's memory
  // grow with the traffic (17 KB a request a subscriber in the review's run) for as long as it stayed connected.
  const { connect } = await import('node:net');
  const serverSide = new Promise<import('node:net').Socket>((resolve) => gw.app.server.once('connection', resolve));
  const { port } = new URL(gw.url);
  const client = connect(Number(port), '127.0.0.1');
  t.teardown(() => client.destroy());
  client.write(`GET /api/live HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
  const socket = await serverSide;
  client.pause(); // never reads from here on
  let most = 0;
  const sample = setInterval(() => (most = Math.max(most, socket.writableLength)), 10);
  t.teardown(() => clearInterval(sample));
  // Many requests in flight at once, arriving and leaving: each change is a list of up to 40 requests.
  const ask = async () => {
    fake.next({ kind: 'ok', delayMs: 30 });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) });
    await res.text();
  };
  for (let round = 0; round < 25; round++) await Promise.all(Array.from({ length: 40 }, ask));
  clearInterval(sample);
  t.ok(most < 256 * 1024, `the gateway held at most ${most} bytes for it (a socket's buffer and one list, not every list)`);
  // Once it reads, it gets the list as it is now.
  client.resume();
  const text = await new Promise<string>((resolve) => {
    let got = '';
    client.on('data', (c: Buffer) => {
      got += c.toString('utf8');
      if (got.includes('"requests":[]}')) resolve(got);
    });
  });
  t.match(text, /event: inflight/, 'and then the current list (nothing in flight)');
});

t.test('the stream ends when the app closes (close does not wait on it)', async (t) => {
  const frames: Frame[] = [];
  const res = await watch(new AbortController().signal, frames, []);
  t.equal(res.status, 200);
  await waitFor(() => frames.length >= 1);
  const closing = Date.now();
  await gw.close();
  t.ok(Date.now() - closing < 5000, `closed in ${Date.now() - closing} ms`);
});

