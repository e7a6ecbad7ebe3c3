// What a request leaves with the ledger's begin sinks (src/pipeline/request.ts, announce): its snapshot and progress
// functions, which the spool (for its markers) and the live monitor keep while it runs, in maps as old as the process.
// They must hold what they read and not the request: a request reachable from them (the Node request, and with it the
// Fastify request, reply, body and headers) had V8 move much of every request's objects out of the young generation
// (docs/benchmarks.md, "What the record kept alive"). Checked with a real collection: with the functions still held, the
// Node request the server handled is collected, and the functions still give the request's record.

import t from 'tap';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import type { UsageRecord } from '../../src/ledger/record.js';
import type { Progress } from '../../src/ledger/ledger.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const oa = await startFakeOpenAI(t);
const gw = await startApp(t, { providers: { oa: fakeProvider(oa.baseUrl) } });

/** What the begin sinks were given, by request id: kept, as the spool and the live monitor keep them. */
const held = new Map<string, { snapshot: () => UsageRecord; progress: () => Progress }>();
gw.app.tollgate.ledger.subscribeBegin((id, snapshot, progress) => held.set(id, { snapshot, progress }));

/** The Node requests the gateway's server handled (not the fake upstream's, in this process too), weakly. */
const served: WeakRef<IncomingMessage>[] = [];
const onStart = (m: unknown) => {
  const { request, server } = m as { request: IncomingMessage; server: unknown };
  if (server === gw.app.server) served.push(new WeakRef(request));
};
subscribe('http.server.request.start', onStart);
t.teardown(() => unsubscribe('http.server.request.start', onStart));

/** POST `body` on a connection of its own, closed after the answer (so no socket keeps the request). */
function post(path: string, body: unknown): Promise<{ status: number; id: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${gw.url}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, id: String(res.headers['x-request-id']), text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Collect until `ref` is gone: the server lets go of a closed connection's request a turn or two late, a busy machine's
 * later, so up to 50 rounds of a turn, 10 ms and a full collection (about half a second at most).
 */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 50 && ref.deref() !== undefined; i++) {
    await turn();
    await sleep(10);
    gc();
  }
  return ref.deref() === undefined;
}

for (const stream of [false, true]) {
  t.test(`${stream ? 'streamed' : 'JSON'} answer: the request is collected while its snapshot is kept`, async (t) => {
    const before = served.length;
    const body = { model: 'oa/gpt-4o', max_tokens: 40, stream, ...(stream ? { stream_options: { include_usage: true } } : {}), messages: [{ role: 'user', content: 'hi' }] };
    const res = await post('/v1/chat/completions', body);
    t.equal(res.status, 200, res.text.slice(0, 200));
    await gw.flush();
    t.equal(served.length, before + 1, 'the server handled one request');
    const kept = held.get(res.id);
    t.ok(kept, 'the begin sinks were given its snapshot');
    t.ok(await collected(served.at(-1)!), 'the Node request is collected while its snapshot and progress are held');
    // The functions still work from what they kept: the request's record as it ended.
    const r = kept!.snapshot();
    t.equal(r.requestId, res.id);
    t.equal(r.model, 'oa/gpt-4o');
    t.equal(r.requestedModel, 'oa/gpt-4o');
    t.equal(r.stream, stream);
    t.equal(r.status, 'success');
    const [row] = await gw.rows(`request_id = '${res.id}'`);
    t.ok(row, 'the request has its row');
    t.same(
      [r.endpoint, r.usage.input, r.usage.output, r.traceId],
      [row!.endpoint, row!.input_tokens, row!.output_tokens, row!.trace_id],
      "the snapshot's endpoint, tokens and trace id are the row's",
    );
    t.ok((r.usage.output ?? 0) > 0, 'output tokens counted');
    t.equal(kept!.progress().streamedTokens, r.usage.output, 'progress: the output counted');
  });
}
