// The benchmark's targets start and record what they serve (issue 17: "the benchmark stays honest"). A change to the
// row's columns once left bench/floor.mjs refusing to start (its check that it writes Tollgate's columns), which only a
// full `npm run bench` showed; this starts the floor and Tollgate's bench target as `npm run bench` does, on the built
// dist/, sends each a whole and a streamed request through the benchmark's fake upstream, and counts the rows stored.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
// @ts-expect-error: a plain ES module of the benchmark, no types
import { startChild, killAll } from '../../bench/lib/ipc.mjs';
// @ts-expect-error: a plain ES module of the benchmark, no types
import { REQUEST_BODY, STREAM_REQUEST_BODY } from '../../bench/lib/payloads.mjs';

const BENCH = join(import.meta.dirname, '..', '..', 'bench');
t.teardown(() => killAll());

const upstream = startChild('upstream', join(BENCH, 'upstream.mjs'));
const { url: upstreamUrl } = (await upstream.ready) as { url: string };
t.teardown(() => upstream.stop());

async function serve(t: Test, url: string): Promise<{ whole: unknown; streamed: string }> {
  const post = async (body: string) => {
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    return { status: res.statusCode, text: await res.body.text() };
  };
  const whole = await post(REQUEST_BODY);
  const streamed = await post(STREAM_REQUEST_BODY);
  t.equal(whole.status, 200, 'the whole answer is a 200');
  t.equal(streamed.status, 200, 'the streamed answer is a 200');
  return { whole: JSON.parse(whole.text), streamed: streamed.text };
}

for (const [name, args] of [
  ['floor', (dir: string) => [upstreamUrl, dir]],
  ['tollgate', (dir: string) => [upstreamUrl, dir]], // the disk spool, embedded store: the benchmark's `tollgate`
] as const) {
  await t.test(`${name}: starts, serves and records both requests`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), `tollgate-bench-${name}-`));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const child = startChild(name, join(BENCH, `${name}.mjs`), args(dir), { readyTimeoutMs: 90_000 });
    t.teardown(() => child.stop());
    const { url } = (await child.ready) as { url: string };
    const { whole, streamed } = await serve(t, url);
    t.match(whole, { object: 'chat.completion', usage: { prompt_tokens: Number } }, 'the answer came through whole');
    t.match(streamed, /data: \[DONE\]/, 'the stream came through to its end');
    const counted = (await child.request('count', undefined, 60_000)) as { rows: number; streamed: number };
    t.equal(counted.rows, 2, 'both requests are stored');
    t.equal(counted.streamed, 1, 'one of them as a stream');
  });
}
