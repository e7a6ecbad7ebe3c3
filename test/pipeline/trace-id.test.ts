// The request's trace id is part of its record (migration 21, src/store/rows.ts `trace_id`): the row of a request
// carries the id of the trace its span belongs to (the incoming traceparent's when there is one), a combo's attempts
// carry their request's, and the request log's details show it, so the console links a row to its trace.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';

const gw = await startApp(t, {
  providers: { demo: DEMO_PROVIDER, other: { ...DEMO_PROVIDER, name: 'Other' } },
  combos: { pair: { strategy: 'fallback', models: ['demo/echo-1', 'other/echo-1'] } },
});

const chat = (model: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });

t.test('an incoming traceparent: the row and the request log carry its trace id, the span too', async (t) => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const res = await chat('demo/echo-1', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
  t.equal(res.status, 200);
  await res.text();
  const id = res.headers.get('x-request-id')!;
  const [row] = await gw.rows(`request_id = '${id}'`);
  t.equal(row!.trace_id, traceId, 'the row');
  const spans = gw.spans.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  t.ok(spans.length > 0, 'the request span is in that trace');
  const logs = (await (await fetch(`${gw.url}/api/usage/request-logs?limit=5`)).json()) as { data: { request_id: string; trace_id: string | null }[] };
  t.equal(logs.data.find((e) => e.request_id === id)?.trace_id, traceId, 'the request log shows it');
});

t.test('no traceparent: the trace the gateway started; a combo\'s attempts carry their request\'s', async (t) => {
  const res = await chat('pair');
  t.equal(res.status, 200);
  await res.text();
  const id = res.headers.get('x-request-id')!;
  const [row] = await gw.rows(`request_id = '${id}'`);
  t.match(row!.trace_id, /^[0-9a-f]{32}$/, 'a trace id of its own');
  const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id);
  t.equal(span?.spanContext().traceId, row!.trace_id, "the request span's trace");
  const attempts = await gw.rows(`parent_id = '${id}'`);
  t.ok(attempts.length > 0, 'the combo made attempts');
  t.ok(attempts.every((a) => a.trace_id === row!.trace_id), 'every attempt row carries the same trace id');
});
