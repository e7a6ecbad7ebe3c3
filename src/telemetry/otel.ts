// The OpenTelemetry SDK for the process, started by main.ts before the app is built. Spans are exported over
// OTLP/HTTP when telemetry.otlp_endpoint or a standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set;
// otherwise no SDK is started (nor loaded: it is the largest dependency, tens of MiB and most of the start time of
// the modules) and the API's no-op tracer costs nothing on the request path.

import type { Config } from '../config/types.js';

export interface TelemetryHandle {
  readonly exporting: boolean;
  shutdown(): Promise<void>;
}

/** `http://host:4318` -> `http://host:4318/v1/traces`; a URL that already names the path is kept. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

export async function startTelemetry(cfg: Config, env: NodeJS.ProcessEnv = process.env): Promise<TelemetryHandle> {
  const endpoint = cfg.telemetry.otlp_endpoint;
  const fromEnv = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (!endpoint && !fromEnv) return { exporting: false, shutdown: async () => undefined };
  const [{ NodeSDK }, { OTLPTraceExporter }] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/exporter-trace-otlp-http')]);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || cfg.telemetry.service_name,
    traceExporter: new OTLPTraceExporter(endpoint ? { url: tracesUrl(endpoint) } : {}),
    instrumentations: [],
  });
  sdk.start();
  return { exporting: true, shutdown: () => sdk.shutdown() };
}
