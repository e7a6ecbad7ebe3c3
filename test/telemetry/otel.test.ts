// The OpenTelemetry SDK as main.ts starts it (src/telemetry/otel.ts), exporting over OTLP/HTTP to a receiver on
// loopback: a request's SERVER span and its upstream call's CLIENT span arrive as one tree, and the trace context the
// upstream receives names the CLIENT span. The SDK registers no context manager: the gateway hands every span its
// parent itself, and the SDK's default (AsyncLocalStorage) would switch Node's async hooks on for every promise and
// callback of every request (docs/benchmarks.md, "Spans exported"). This file starts the SDK globally, so it holds
// nothing else.

import t from 'tap';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { startTelemetry, tracesUrl } from '../../src/telemetry/otel.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { askChat, otlpReceiver, startGlobalTracedApp } from '../helpers/otlp.js';

t.test('tracesUrl: the OTLP traces path is added once', async (t) => {
  t.equal(tracesUrl('http://collector:4318'), 'http://collector:4318/v1/traces');
  t.equal(tracesUrl('http://collector:4318/'), 'http://collector:4318/v1/traces');
  t.equal(tracesUrl('http://collector:4318/v1/traces'), 'http://collector:4318/v1/traces');
});

t.test('no endpoint: no SDK', async (t) => {
  const cfg = testConfig({}, tempDir(t));
  const handle = await startTelemetry(cfg, {});
  t.equal(handle.exporting, false);
  t.equal(trace.getTracerProvider().getTracer('x').startSpan('s').isRecording(), false, 'the API\'s no-op tracer');
});

t.test('spans exported over OTLP/HTTP: one tree a request, the upstream told the CLIENT span', async (t) => {
  const receiver = await otlpReceiver(t);
  const upstream = await startFakeOpenAI(t);
  const cfg = testConfig({ providers: { oa: fakeProvider(upstream.baseUrl) }, telemetry: { otlp_endpoint: receiver.url } }, tempDir(t));
  const telemetry = await startTelemetry(cfg, {});
  let shut = false;
  const shutdown = async () => {
    if (shut) return;
    shut = true;
    await telemetry.shutdown();
  };
  t.teardown(shutdown);
  t.equal(telemetry.exporting, true);

  // No context manager: a context given to `with` is not the active one after an await (AsyncLocalStorage's would be).
  const marker = trace.setSpan(ROOT_CONTEXT, trace.getTracer('t').startSpan('marker'));
  const across = await context.with(marker, async () => {
    const before = context.active();
    await new Promise((resolve) => setImmediate(resolve));
    return { before, after: context.active() };
  });
  t.equal(across.before, ROOT_CONTEXT, 'no context manager registered: `with` sets nothing');
  t.equal(across.after, ROOT_CONTEXT, 'the SDK registered no context manager that follows awaits');

  const { app, url } = await startGlobalTracedApp(t, cfg);
  const client = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  t.equal(await askChat(url, 'hi', { traceparent: `00-${client.traceId}-${client.spanId}-01` }), 200);
  await app.close();
  await shutdown(); // flushes the batch

  t.ok(receiver.paths.length > 0 && receiver.paths.every((p) => p === '/v1/traces'), 'POSTed to /v1/traces');
  const server = receiver.spans.filter((s) => s.kind === 2);
  const call = receiver.spans.filter((s) => s.kind === 3);
  t.equal(server.length, 1, 'one SERVER span');
  t.equal(call.length, 1, 'one CLIENT span');
  t.equal(server[0]!.name, 'chat oa/gpt-4o');
  t.equal(server[0]!.traceId, client.traceId, 'the client\'s trace');
  t.equal(server[0]!.parentSpanId, client.spanId, 'under the client\'s span');
  t.equal(call[0]!.traceId, client.traceId);
  t.equal(call[0]!.parentSpanId, server[0]!.spanId, 'the upstream call under the request');
  const requestId = server[0]!.attributes.find((a) => a.key === 'tollgate.request_id')?.value.stringValue;
  t.match(requestId, /^[0-9a-f-]{36}$/, 'the span names its request');
  t.equal(upstream.received.length, 1);
  t.equal(upstream.received[0]!.headers.traceparent, `00-${client.traceId}-${call[0]!.spanId}-01`, 'the upstream got the CLIENT span as its parent');
});
