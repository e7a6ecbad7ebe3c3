// The span ledger. One SERVER span per client request, named `chat {model}`, with GenAI attributes; one CLIENT
// child span per upstream call; W3C trace context is taken from the client and passed upstream. Span attributes
// for usage and cost come from the finished usage record, the same object the row and the metrics are made from.

import type { IncomingHttpHeaders } from 'node:http';
import { SpanKind, SpanStatusCode, context, isSpanContextValid, trace, type Attributes, type Context, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
// The W3C propagator's own module, not the package's index: the index loads all of @opentelemetry/core (83 files and
// @opentelemetry/semantic-conventions, about 60 ms of every start and 1 MiB of heap, docs/benchmarks.md) for this one
// class, which needs three small files. The package has no `exports` map, so the path is public; the SDK's index
// loads the same file when an OTLP endpoint is set. test/telemetry/propagator.test.ts pins it to the index's class.
import { W3CTraceContextPropagator } from '@opentelemetry/core/build/src/trace/W3CTraceContextPropagator.js';
import { inputSide, knowsInput, knowsOutput, outputSide } from '../ledger/types.js';
import { MAX_REQUESTED_MODEL, type UsageRecord } from '../ledger/record.js';
import type { StopReason } from '../wire/canonical.js';
import { ATTR } from './names.js';

const propagator = new W3CTraceContextPropagator();

const headerGetter = {
  keys: (c: IncomingHttpHeaders) => Object.keys(c),
  get: (c: IncomingHttpHeaders, k: string) => c[k],
};
const recordSetter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };

/** One upstream call's CLIENT span. `end` records how the call went; `close` ends it (with the record of a combo
 * attempt, whose tokens and cost then sit on its own span). */
export class UpstreamSpan {
  readonly #span: Span;
  #ended = false;
  constructor(span: Span) {
    this.#span = span;
  }
  end(status: number | null, errorType: string | null): void {
    if (status !== null) this.#span.setAttribute(ATTR.httpStatus, status);
    if (errorType) {
      this.#span.setAttribute(ATTR.errorType, errorType);
      this.#span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  close(attempt: UsageRecord | null): void {
    if (this.#ended) return;
    this.#ended = true;
    if (attempt !== null && this.#span.isRecording()) {
      const a = recordAttributes(attempt);
      delete a[ATTR.httpStatus]; // the upstream's status, set by end(), stays
      this.#span.setAttributes({ ...a, [ATTR.parentRequestId]: attempt.parentId, [ATTR.combo]: attempt.combo, [ATTR.attempt]: attempt.attempt });
    }
    this.#span.end();
  }
}

export class RequestTrace {
  readonly #tracer: Tracer;
  readonly #span: Span;
  readonly #ctx: Context;
  #dropped: readonly string[] = [];

  constructor(tracer: Tracer, headers: IncomingHttpHeaders, endpoint: string) {
    this.#tracer = tracer;
    const parent = propagator.extract(context.active(), headers, headerGetter);
    this.#span = tracer.startSpan('chat', { kind: SpanKind.SERVER, attributes: { [ATTR.operationName]: 'chat', [ATTR.endpoint]: endpoint } }, parent);
    this.#ctx = trace.setSpan(parent, this.#span);
  }

  /** A request to a combo: the span is named after the combo; each member call is a child span. */
  routedCombo(combo: string): void {
    this.#span.updateName(`chat ${combo}`);
    this.#span.setAttributes({ [ATTR.requestModel]: combo, [ATTR.combo]: combo });
  }

  /** The trace's id (32 hex digits), or '' when the span has no valid context (no SDK and no incoming traceparent). */
  get traceId(): string {
    const c = this.#span.spanContext();
    return isSpanContextValid(c) ? c.traceId : '';
  }

  /** Name the span after the routed model once it is known (an unlisted model's id, client input, bounded as in the row). */
  routed(model: string, provider: string, modelId: string): void {
    this.#span.updateName(`chat ${model.slice(0, MAX_REQUESTED_MODEL)}`);
    this.#span.setAttributes({ [ATTR.requestModel]: modelId.slice(0, MAX_REQUESTED_MODEL), [ATTR.providerName]: provider });
  }

  /**
   * Start the child span for an upstream call; returns it and the headers that carry the trace upstream. URL
   * attributes are only computed when the span records (with no SDK started, nothing is).
   */
  upstream(baseUrl: string, path: string, provider: string): { span: UpstreamSpan; headers: Record<string, string> } {
    const span = this.#tracer.startSpan('POST', { kind: SpanKind.CLIENT }, this.#ctx);
    if (span.isRecording()) {
      const url = new URL(path, baseUrl || `http://${provider}.mock`);
      span.setAttributes({
        [ATTR.httpMethod]: 'POST',
        [ATTR.serverAddress]: url.hostname,
        [ATTR.serverPort]: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        [ATTR.urlFull]: `${url.origin}${url.pathname}`,
        [ATTR.provider]: provider,
      });
    }
    const headers: Record<string, string> = {};
    if (isSpanContextValid(span.spanContext())) propagator.inject(trace.setSpan(this.#ctx, span), headers, recordSetter);
    return { span: new UpstreamSpan(span), headers };
  }

  /**
   * The CLIENT span of a combo attempt that sent nothing upstream (refused before its call: a parameter the member
   * cannot carry, no connection, the client gone): its row is an attempt too, so its span is (docs/observability.md).
   * No URL attributes, no trace headers: no request was made.
   */
  unsent(provider: string, errorType: string): UpstreamSpan {
    const span = this.#tracer.startSpan('POST', { kind: SpanKind.CLIENT }, this.#ctx);
    if (span.isRecording()) span.setAttribute(ATTR.provider, provider);
    const s = new UpstreamSpan(span);
    s.end(null, errorType);
    return s;
  }

  /**
   * The client parameters the request that served did not carry. Kept until the span ends, since a combo's later
   * attempt replaces an earlier one's list (an attribute, once set, cannot be removed).
   */
  droppedParams(params: readonly string[]): void {
    this.#dropped = params;
  }

  setResponse(id: string | null, model: string | null, finishReasons: string[]): void {
    const a: Attributes = {};
    if (id) a[ATTR.responseId] = id;
    if (model) a[ATTR.responseModel] = model;
    if (finishReasons.length > 0) a[ATTR.finishReasons] = finishReasons;
    this.#span.setAttributes(a);
  }

  end(r: UsageRecord): void {
    // Without an SDK the span records nothing: its attributes are not even computed.
    if (this.#span.isRecording()) {
      this.#span.setAttributes(recordAttributes(r));
      // A combo request's span names the provider of the member that answered (its row's), as a direct one's does.
      if (r.kind === 'combo' && r.provider !== '') this.#span.setAttribute(ATTR.providerName, r.provider);
      if (this.#dropped.length > 0) this.#span.setAttribute(ATTR.droppedParams, [...this.#dropped]);
    }
    if (r.status !== 'success') this.#span.setStatus({ code: SpanStatusCode.ERROR, message: r.errorType });
    this.#span.end();
  }
}

/**
 * `gen_ai.response.finish_reasons` for an answer that went through the canonical model: the canonical stop reason in
 * the OpenAI vocabulary the direct path reports (`stop`, `length`, `tool_calls`, `content_filter`), so one model's
 * spans read the same whichever path served them.
 */
export function finishReasonOf(stop: StopReason): string {
  switch (stop) {
    case 'end':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return stop;
  }
}

/** The pure mapping from a usage record to span attributes. Null buckets are left out (not reported). */
export function recordAttributes(r: UsageRecord): Attributes {
  const a: Attributes = {
    [ATTR.requestId]: r.requestId,
    [ATTR.provider]: r.provider,
    [ATTR.providerGroup]: r.providerGroup,
    [ATTR.apiKeyName]: r.apiKeyName,
    [ATTR.status]: r.status,
    [ATTR.stream]: r.stream,
    [ATTR.httpStatus]: r.httpStatus,
    [ATTR.totalTokens]: r.totalTokens,
    [ATTR.usageSource]: r.usageSource,
    [ATTR.kind]: r.kind,
    [ATTR.dispatched]: r.dispatched,
    [ATTR.cost]: r.cost.cost,
    [ATTR.listCost]: r.cost.listCost,
  };
  if (r.cost.priceSource !== undefined) a[ATTR.priceSource] = r.cost.priceSource;
  if (knowsInput(r.usage)) a[ATTR.inputTokens] = inputSide(r.usage);
  if (knowsOutput(r.usage)) a[ATTR.outputTokens] = outputSide(r.usage);
  const put = (k: string, v: number | null) => {
    if (v !== null) a[k] = v;
  };
  put(ATTR.inputUncached, r.usage.input);
  put(ATTR.cachedTokens, r.usage.cached);
  put(ATTR.cacheWriteTokens, r.usage.cacheWrite);
  if (r.usage.cacheWrite1h !== undefined) put(ATTR.cacheWrite1hTokens, r.usage.cacheWrite1h);
  if (r.usage.webSearches !== undefined) put(ATTR.webSearches, r.usage.webSearches);
  if (r.usage.audioInput !== undefined) a[ATTR.audioInputTokens] = r.usage.audioInput;
  if (r.usage.audioOutput !== undefined) a[ATTR.audioOutputTokens] = r.usage.audioOutput;
  if (r.usage.serviceTier !== undefined) a[ATTR.serviceTier] = r.usage.serviceTier;
  put(ATTR.outputNonReasoning, r.usage.output);
  put(ATTR.reasoningTokens, r.usage.reasoning);
  put(ATTR.upstreamMs, r.upstreamMs);
  if (r.latency.kind === 'stream') put(ATTR.ttftMs, r.latency.ttftMs);
  if (r.errorType) a[ATTR.errorType] = r.errorType;
  if (r.combo) a[ATTR.combo] = r.combo;
  if (r.connection) a[ATTR.connection] = r.connection;
  if (r.autoSwitched) a[ATTR.autoSwitched] = true;
  return a;
}

export class Tracing {
  readonly #tracer: Tracer;
  constructor(provider: TracerProvider = trace.getTracerProvider()) {
    this.#tracer = provider.getTracer('tollgate');
  }
  start(headers: IncomingHttpHeaders, endpoint: string): RequestTrace {
    return new RequestTrace(this.#tracer, headers, endpoint);
  }
}
