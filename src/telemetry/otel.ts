// The OpenTelemetry SDK for the process, started by main.ts before the app is built. Spans are exported over
// OTLP/HTTP when telemetry.otlp_endpoint or a standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set;
// otherwise no SDK is started (nor loaded: it is the largest dependency, tens of MiB and most of the start time of
// the modules) and the API's no-op tracer costs nothing on the request path.

import type { ContextManager, MeterProvider } from '@opentelemetry/api';
import type { BufferConfig } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/types.js';
import { spanExportStats } from './span-stats.js';
import { within } from '../core/within.js';

/**
 * No context manager: the gateway hands each span its parent itself (src/telemetry/tracing.ts) and reads no active
 * context across an await. The SDK's default, AsyncLocalStorage, switches Node's async hooks on for the whole process
 * once first used, which on Node 20 taxes every promise and native callback of every request (8 % of the CPU a
 * request with spans exported: docs/benchmarks.md, "Spans exported"). `null` is the SDK's "register none" (its
 * setupContextManager); its configuration type does not list it yet.
 */
const NO_CONTEXT_MANAGER = null as unknown as ContextManager;

export interface TelemetryHandle {
  readonly exporting: boolean;
  /**
   * Export what is queued and stop; given `withinMs`, resolved by then whatever the collector does (what it has not
   * taken by then is lost: the rows and metrics are the record, spans its third part). Never rejects.
   */
  shutdown(withinMs?: number): Promise<void>;
}

/**
 * The least a stop gives queued spans, whatever is left of `server.shutdown_timeout_s` after the drain: a collector
 * that answers takes them in milliseconds; one that hangs held a stop up to the OTLP exporter's own 10 s past its
 * bound.
 */
export const SPANS_AT_STOP_MS = 2_000;

/** `http://host:4318` -> `http://host:4318/v1/traces`; a URL that already names the path is kept. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

export async function startTelemetry(cfg: Config, env: NodeJS.ProcessEnv = process.env): Promise<TelemetryHandle> {
  const endpoint = cfg.telemetry.otlp_endpoint;
  const fromEnv = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (!endpoint && !fromEnv) return { exporting: false, shutdown: async () => undefined };
  const [{ NodeSDK }, { OTLPTraceExporter }, { BatchSpanProcessor }] = await Promise.all([
    import('@opentelemetry/sdk-node'), import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/sdk-trace-base'),
  ]);
  // The batch processor NodeSDK would make from a trace exporter (it reads the OTEL_BSP_* variables too), made here to
  // give it the meter provider that counts what becomes of the spans (src/telemetry/span-stats.ts; the option is the
  // SDK's, marked experimental, and test/telemetry/span-stats.test.ts holds it to its word).
  const counted: BufferConfig & { selfObsMeterProvider: MeterProvider } = { selfObsMeterProvider: spanExportStats };
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || cfg.telemetry.service_name,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(endpoint ? { url: tracesUrl(endpoint) } : {}), counted)],
    instrumentations: [],
    contextManager: NO_CONTEXT_MANAGER,
  });
  sdk.start();
  return {
    exporting: true,
    shutdown: async (withinMs) => {
      const done = sdk.shutdown().catch(() => undefined);
      await (withinMs === undefined ? done : within(done, withinMs));
    },
  };
}
