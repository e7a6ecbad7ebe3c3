// What became of the spans (src/telemetry/span-stats.ts): the SDK's own batch span processor reports each span
// exported, failed or dropped (its queue full), and how many wait, to the meter provider the gateway gives it; /metrics
// shows them as tollgate_spans_total{result} and tollgate_spans_queued. First against the real processor with an
// exporter the test holds (every count exact, the full queue made on purpose), then the SDK as main.ts starts it,
// exporting to a receiver on loopback that takes the spans and then refuses them. The second part starts the SDK
// globally (once a process), so this file holds nothing else that does.

import t from 'tap';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanExportStats, spanExportStats } from '../../src/telemetry/span-stats.js';
import { Metrics } from '../../src/telemetry/metrics.js';
import { startTelemetry } from '../../src/telemetry/otel.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { askChat, otlpReceiver, startGlobalTracedApp } from '../helpers/otlp.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

const IDLE = { rows: 0, bytes: 0, oldestMs: null, up: true };

/** An exporter whose exports the test answers: each waits in `pending` for `answer`. */
class HeldExporter implements SpanExporter {
  readonly pending: { spans: ReadableSpan[]; done: (r: ExportResult) => void }[] = [];
  export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
    this.pending.push({ spans, done });
  }
  answer(code: ExportResultCode): number {
    const next = this.pending.shift();
    if (next === undefined) throw new Error('no export waiting');
    next.done(code === ExportResultCode.SUCCESS ? { code } : { code, error: new Error('collector unreachable') });
    return next.spans.length;
  }
  async shutdown(): Promise<void> {}
}

t.test('the real batch processor, counted: exported, failed, dropped when its queue is full, and what waits', async (t) => {
  const stats = new SpanExportStats();
  const exporter = new HeldExporter();
  const processor = new BatchSpanProcessor(exporter, { maxQueueSize: 4, maxExportBatchSize: 2, scheduledDelayMillis: 60_000, selfObsMeterProvider: stats } as ConstructorParameters<typeof BatchSpanProcessor>[1]);
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  t.teardown(() => provider.shutdown().catch(() => undefined));
  const tracer = provider.getTracer('test');
  const end = (n: number) => { for (let i = 0; i < n; i++) tracer.startSpan(`s${i}`).end(); };

  end(2); // a full batch: exported at once, held by the exporter
  t.equal(exporter.pending.length, 1, 'one export of two spans under way');
  t.equal(stats.queued(), 0, 'those two left the queue');
  end(6); // while that export is held: four fill the queue, two are dropped
  t.equal(stats.queued(), 4, 'the queue full');
  t.equal(stats.count('dropped'), 2, 'the two that did not fit, dropped');
  t.equal(stats.count('exported') + stats.count('failed'), 0, 'no export answered yet');

  t.equal(exporter.answer(ExportResultCode.SUCCESS), 2);
  await waitFor(() => exporter.pending.length === 1);
  t.equal(stats.count('exported'), 2, 'the answered batch, exported');
  t.equal(exporter.answer(ExportResultCode.FAILED), 2);
  await waitFor(() => exporter.pending.length === 1);
  t.equal(stats.count('failed'), 2, 'the refused batch, failed');
  t.equal(exporter.answer(ExportResultCode.SUCCESS), 2);
  await waitFor(() => stats.count('exported') === 4);
  t.equal(stats.queued(), 0, 'nothing waits');
  t.same({ exported: stats.count('exported'), failed: stats.count('failed'), dropped: stats.count('dropped') }, { exported: 4, failed: 2, dropped: 2 },
    'every one of the 8 spans ended has one result');

  const text = await new Metrics(() => IDLE, { processMetrics: false, spans: stats }).registry.metrics();
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'exported' }), 4);
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'failed' }), 2);
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'dropped' }), 2);
  t.match(text, /^tollgate_spans_queued 0$/m);
});

t.test('no SDK: the series exist at 0', async (t) => {
  const text = await new Metrics(() => IDLE, { processMetrics: false, spans: new SpanExportStats() }).registry.metrics();
  for (const result of ['exported', 'failed', 'dropped']) t.ok(text.split('\n').includes(`tollgate_spans_total{result="${result}"} 0`), result);
  t.match(text, /^tollgate_spans_queued 0$/m);
});

t.test('the SDK as main.ts starts it: spans the collector took, then spans it refused, in /metrics', async (t) => {
  const receiver = await otlpReceiver(t);
  const upstream = await startFakeOpenAI(t);
  const cfg = testConfig({ providers: { oa: fakeProvider(upstream.baseUrl) }, telemetry: { otlp_endpoint: receiver.url } }, tempDir(t));
  const before = process.env.OTEL_BSP_SCHEDULE_DELAY;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '20'; // read by the processor at start: an export 20 ms after a span ends
  t.teardown(() => {
    if (before === undefined) delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    else process.env.OTEL_BSP_SCHEDULE_DELAY = before;
  });
  const telemetry = await startTelemetry(cfg, {});
  t.teardown(() => telemetry.shutdown());
  const { app, url } = await startGlobalTracedApp(t, cfg);
  const ask = async (i: number) => t.equal(await askChat(url, `hi ${i}`), 200);
  const scrape = async () => {
    const res = await fetch(`${url}/metrics`);
    return res.text();
  };

  for (let i = 0; i < 3; i++) await ask(i);
  await waitFor(() => spanExportStats.count('exported') >= 6);
  let text = await scrape();
  t.equal(receiver.spans.length, 6, 'the collector took a SERVER and a CLIENT span a request');
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'exported' }), receiver.spans.length, 'exported: what the collector took');
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'failed' }), 0);

  receiver.status = 400; // the collector now refuses every export (not retryable)
  for (let i = 0; i < 2; i++) await ask(i);
  await waitFor(() => spanExportStats.count('failed') >= 4);
  text = await scrape();
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'failed' }), 4, 'failed: the spans of the two requests the collector refused');
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'exported' }), 6, 'exported unchanged');
  t.equal(receiver.spans.length, 6, 'the collector kept none of them');
  t.equal(metricValue(text, 'tollgate_spans_total', { result: 'dropped' }), 0, 'none dropped: the queue never filled');
  t.equal(metricValue(text, 'tollgate_spans_queued', {}), 0, 'none waiting');
  t.equal(metricValue(text, 'tollgate_requests_total', { status: 'success' }), 5, 'every request in the metrics whatever became of its spans');
  await app.tollgate.writer.flush();
  const s = app.tollgate.store;
  const rows = await s.query<{ n: string }>(`SELECT count() AS n FROM ${s.t('requests')} FINAL`);
  t.equal(Number(rows[0]!.n), 5, 'and in the rows');
});
