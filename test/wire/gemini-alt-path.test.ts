// The Gemini passthrough's `alt` (src/wire/gemini/same-format.ts, src/wire/endpoint.ts) over real sockets: the
// client's value reaches the provider in the provider's own path, and distinct values, however many and however
// long, leave nothing in the gateway (the upstream path was memoised per suffix, `alt` included: a memory DoS).

import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startApp } from '../helpers/app.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const up = await startFakeGemini(t);
const gw = await startApp(t, { providers: { gem: geminiProvider(up) } });
const BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });

const post = async (path: string): Promise<number> => {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
  await res.arrayBuffer();
  return res.status;
};

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

t.test("the client's alt reaches the provider in its own path", async (t) => {
  for (const [alt, sent] of [['sse', 'sse'], ['json', 'json'], ['a b&c', 'a%20b%26c']] as const) {
    t.equal(await post(`/v1beta/models/gem/gemini-2.5-flash:streamGenerateContent?alt=${encodeURIComponent(alt)}`), 200, `alt=${alt}`);
    t.equal(up.received.at(-1)!.path, `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=${sent}`);
  }
  t.equal(await post('/v1beta/models/gem/gemini-2.5-flash:generateContent'), 200);
  t.equal(up.received.at(-1)!.path, '/v1beta/models/gemini-2.5-flash:generateContent', 'no alt: none added');
});

t.test('distinct alt values leave nothing in the gateway', async (t) => {
  const N = 800;
  const pad = 'x'.repeat(12_000); // under Node's 16 KB header limit
  for (let i = 0; i < 50; i++) await post(`/v1beta/models/gem/gemini-2.5-flash:generateContent?alt=warm${i}`);
  await gw.flush();
  up.received.length = 0;
  gw.spans.reset();
  const before = heapAfterGc();
  const statuses: number[] = [];
  let wrongPaths = 0;
  for (let i = 0; i < N; i += 16) {
    const batch = Array.from({ length: 16 }, (_, j) => i + j);
    statuses.push(...(await Promise.all(batch.map((n) => post(`/v1beta/models/gem/gemini-2.5-flash:generateContent?alt=${pad}${n}`)))));
    // The fake keeps what it received and the test's span exporter every span (the URL in it): checked or not
    // needed, then let go, so only what the gateway keeps is measured.
    for (const r of up.received) if (!/^\/v1beta\/models\/gemini-2\.5-flash:generateContent\?alt=x{12000}\d+$/.test(r.path)) wrongPaths++;
    up.received.length = 0;
    gw.spans.reset();
  }
  await gw.flush();
  gw.spans.reset();
  t.same([...new Set(statuses)], [200], 'every request answered');
  t.equal(wrongPaths, 0, "every upstream path carries the request's own alt");
  const retained = heapAfterGc() - before;
  // Measured: about 5 MiB, as much as one alt value sent 800 times leaves (not the paths); with the paths memoised
  // per suffix, as before the fix, 800 distinct 12 KB values left about 33 MiB.
  t.ok(retained < 12 * 1024 * 1024, `${(retained / 1048576).toFixed(1)} MiB retained after ${N} requests with distinct 12 KB alt values (bound: 12 MiB)`);
});
