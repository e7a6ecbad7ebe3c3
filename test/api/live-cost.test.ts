// GET /api/live's cost_so_far while a stream runs and its upstream has not reported usage yet (OpenAI Chat and
// Responses streams report it in their last event): the input is priced as estimated from the request sent, not left
// out. Each upstream stalls after its first output (the socket stays open), so what /api/live says is read while the
// request is in flight; then the client goes away.

import t, { type Test } from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { respProvider, startFakeResponses } from '../helpers/fake-responses.js';
import { waitFor } from '../helpers/wait.js';

interface Live {
  request_id: string;
  model: string;
  provider: string;
  streamed_tokens: number;
  cost_so_far: number | null;
}

const oa = await startFakeOpenAI(t);
const rs = await startFakeResponses(t);
const slow = { timeouts: { connect_s: 2, stall_s: 30 } };
const gw = await startApp(t, {
  providers: { oa: fakeProvider(oa.baseUrl, slow), rs: respProvider(rs.baseUrl, slow) },
  combos: { solo: { strategy: 'fallback', models: ['oa/gpt-4o'] }, pair: { strategy: 'fallback', models: ['rs/gpt-4.1', 'oa/gpt-4o'] } },
});

/** 4,000 times five words: 20,002 tokens in o200k_base, 27,000 at four characters a token. */
const PROMPT = 'lorem ipsum dolor sit amet '.repeat(4000);
const PROMPT_TOKENS = 20_000;

/** The request's entry in /api/live once it has streamed some output, read while the upstream holds the stream open. */
async function liveWhileStreaming(t: Test, path: string, body: unknown): Promise<{ entry: Live; end: () => Promise<void> }> {
  const watching = new AbortController();
  const live = await fetch(`${gw.url}/api/live`, { signal: watching.signal });
  const reader = live.body!.pipeThrough(new TextDecoderStream()).getReader();
  const client = new AbortController();
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: client.signal });
  t.equal(res.status, 200);
  const id = res.headers.get('x-request-id')!;
  let entry: Live | undefined;
  let buf = '';
  while (entry === undefined || entry.streamed_tokens === 0) {
    const { value, done } = await reader.read();
    if (done) throw new Error('/api/live ended');
    buf += value;
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) !== -1) {
      const data = /^event: inflight\ndata: (.*)$/s.exec(buf.slice(0, cut));
      buf = buf.slice(cut + 2);
      if (data) entry = (JSON.parse(data[1]!) as { requests: Live[] }).requests.find((r) => r.request_id === id) ?? entry;
    }
  }
  const end = async () => {
    watching.abort();
    client.abort();
    await res.text().catch(() => undefined);
    await waitFor(async () => (await gw.rows(`request_id = '${id}'`)).length === 1);
  };
  return { entry, end };
}

const chat = (model: string) => ({ model, stream: true, messages: [{ role: 'user', content: PROMPT }] });

/**
 * Each client and path: what the upstreams do, the request, the model that streams and its provider's input price
 * ($ per 1M tokens). A combo's entry names the member streaming, and its cost is its attempts' (finished and in flight).
 */
const cases = [
  { name: 'OpenAI Chat client, OpenAI provider (fast path)', stall: () => oa.next({ kind: 'stall', chunks: 2 }), path: '/v1/chat/completions', body: chat('oa/gpt-4o'), model: 'oa/gpt-4o', price: 2.5 },
  { name: 'Responses client, Responses provider (passthrough)', stall: () => rs.next({ kind: 'stall', events: 6 }), path: '/v1/responses', body: { model: 'rs/gpt-4.1', stream: true, input: PROMPT }, model: 'rs/gpt-4.1', price: 2 },
  { name: 'Responses client, OpenAI Chat provider (translated)', stall: () => oa.next({ kind: 'stall', chunks: 2 }), path: '/v1/responses', body: { model: 'oa/gpt-4o', stream: true, input: PROMPT }, model: 'oa/gpt-4o', price: 2.5 },
  { name: 'a fallback combo of one member', stall: () => oa.next({ kind: 'stall', chunks: 2 }), path: '/v1/chat/completions', body: chat('solo'), model: 'oa/gpt-4o', price: 2.5 },
  {
    name: 'a fallback combo whose first member failed',
    stall: () => {
      rs.next({ kind: 'error', status: 503, body: { error: { message: 'overloaded' } } });
      oa.next({ kind: 'stall', chunks: 2 });
    },
    path: '/v1/chat/completions', body: chat('pair'), model: 'oa/gpt-4o', price: 2.5,
  },
];

for (const c of cases) {
  t.test(`${c.name}: the input counts while the stream runs`, async (t) => {
    c.stall();
    const { entry, end } = await liveWhileStreaming(t, c.path, c.body);
    await end();
    t.match(entry, { model: c.model, provider: c.model.split('/')[0] }, 'the model streaming');
    // Before, the output alone: $0.00003 for the fast path's two chunks; a combo's $0 and model _other.
    const least = (PROMPT_TOKENS * c.price) / 1e6;
    t.ok(entry.cost_so_far! >= least, `cost_so_far ${entry.cost_so_far} >= ${least} (20,000 input tokens as estimated)`);
    t.ok(entry.cost_so_far! < (30_000 * c.price + 100 * 10) / 1e6, `and not more than the input can be: ${entry.cost_so_far}`);
  });
}
