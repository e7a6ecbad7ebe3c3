// Sampling spans out with the standard variable (docs/telemetry.md: what a busy gateway does about the span's cost):
// the SDK as main.ts starts it reads OTEL_TRACES_SAMPLER, so no span is exported, while the request still has its
// row (with its trace id) and its metrics, and the upstream still gets the trace context (not sampled). The variable
// is read when the SDK starts, which is once a process: this file holds nothing else.

import t from 'tap';
import { startTelemetry } from '../../src/telemetry/otel.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { askChat, otlpReceiver, startGlobalTracedApp } from '../helpers/otlp.js';

t.test('OTEL_TRACES_SAMPLER=always_off: no span exported, every request still recorded', async (t) => {
  const receiver = await otlpReceiver(t);
  const upstream = await startFakeOpenAI(t);
  const cfg = testConfig({ providers: { oa: fakeProvider(upstream.baseUrl) }, telemetry: { otlp_endpoint: receiver.url } }, tempDir(t));
  const before = process.env.OTEL_TRACES_SAMPLER;
  process.env.OTEL_TRACES_SAMPLER = 'always_off';
  t.teardown(() => {
    if (before === undefined) delete process.env.OTEL_TRACES_SAMPLER;
    else process.env.OTEL_TRACES_SAMPLER = before;
  });
  const telemetry = await startTelemetry(cfg, {});
  t.equal(telemetry.exporting, true, 'the SDK started');

  const { app, url } = await startGlobalTracedApp(t, cfg);
  for (let i = 0; i < 3; i++) t.equal(await askChat(url, `hi ${i}`), 200);
  await app.tollgate.writer.flush();
  const s = app.tollgate.store;
  const rows = await s.query<{ trace_id: string; status: string }>(`SELECT trace_id, status FROM ${s.t('requests')} FINAL ORDER BY ts`);
  t.equal(rows.length, 3, 'a row a request');
  t.ok(rows.every((r) => /^[0-9a-f]{32}$/.test(r.trace_id) && r.status === 'success'), 'each with its trace id');
  t.equal(new Set(rows.map((r) => r.trace_id)).size, 3, 'a trace a request');
  const metrics = await app.tollgate.metrics.registry.metrics();
  t.match(metrics, /tollgate_requests_total\{[^}]*\} 3\b/, 'and its metrics');
  t.equal(upstream.received.length, 3);
  upstream.received.forEach((r, i) => t.equal(r.headers.traceparent, `00-${rows[i]!.trace_id}-${String(r.headers.traceparent).slice(36, 52)}-00`, 'the upstream got the trace, not sampled'));
  await app.close();
  await telemetry.shutdown(); // flushes whatever was queued: nothing
  t.same(receiver.spans, [], 'no span exported');
});
