// A provider usage source answers a few numbers; an answer over 1 MiB is not read whole (held in memory) but taken
// as an invalid reading, the previous one kept (src/accounting/quota-source.ts). Before, any size was read.

import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { UsageSources } from '../../src/accounting/quota-source.js';
import { flushed, listenLoopback } from '../helpers/loopback.js';

let huge = false;
let sent = 0;
let completed = false;
const source = await listenLoopback(t, async (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  if (!huge) return void res.end('{"used": 40, "limit": 100}');
  // A reading padded past 1 MiB, chunked (no content-length), as fast as the gateway reads it.
  await flushed(res, '{"used": 50, "limit": 100, "pad": "');
  const pad = 'x'.repeat(64 * 1024);
  for (sent = 0; sent < 16 * 1024 * 1024 && !res.destroyed; sent += pad.length) await flushed(res, pad);
  if (res.destroyed) return;
  res.end('"}');
  completed = true;
}, (err, res) => res.destroy(err as Error));

t.test('a reading over 1 MiB is invalid, not read whole; the last good reading stays', async (t) => {
  let now = 0;
  const sources = new UsageSources(() => now);
  const settings = { url: `http://127.0.0.1:${source.port}/usage`, headers: {}, refresh_s: 180 };
  const first = await sources.refresh('p', settings);
  t.match(first, { status: 'ok', reading: { used: 40, limit: 100 } });
  huge = true;
  now += 181_000;
  await sources.refresh('p', settings); // answers the last state and asks in the background
  for (let i = 0; i < 200 && sources.state('p')!.status === 'ok'; i++) await new Promise((r) => setTimeout(r, 25));
  t.match(sources.state('p'), { status: 'invalid', reading: { used: 40, limit: 100 } });
  t.equal(completed, false, `the source could not send its whole answer (sent ${sent} bytes before the gateway hung up)`);
});

t.test("a source's Retry-After is honoured up to a day: one that says 3,000 years is asked again tomorrow", async (t) => {
  const slow = await listenLoopback(t, async (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '99999999999' });
    res.end('{}');
  }, (err, res) => res.destroy(err as Error));
  const now = 1_000_000;
  const sources = new UsageSources(() => now);
  await sources.refresh('p', { url: `http://127.0.0.1:${slow.port}/usage`, headers: {}, refresh_s: 180 });
  const s = sources.state('p')!;
  t.equal(s.status, '429');
  t.equal(s.nextFetch, now + 24 * 3_600_000, 'asked again after a day, not in 3,170 years');
});
