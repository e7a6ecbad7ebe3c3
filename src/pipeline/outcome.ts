// What every data-plane pipeline shares: the outcome of one request, folded into the one usage record that goes to
// every ledger (row + metrics) and closes the span; the record of a request refused before its handler ran; and
// the small helpers for answering a client that may already be gone.

import { performance } from 'node:perf_hooks';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ProviderGroup } from '../config/types.js';
import type { TollgateError } from '../core/errors.js';
import type { Route } from '../routing/resolve.js';
import { computeCost, ZERO_COST, type Cost } from '../ledger/cost.js';
import { makeRecord, type RecordKind, type RequestStatus, type UsageRecord } from '../ledger/record.js';
import { estimateMissing, familyOf, type AnswerText, type SentRequest } from '../wire/estimate.js';
import { NO_USAGE, type Usage, type UsageSource } from '../ledger/types.js';
import { uuidv7 } from '../ledger/uuidv7.js';
import type { Progress } from '../ledger/ledger.js';
import { OTHER } from '../telemetry/names.js';
import { finishReasonOf, type RequestTrace, type UpstreamSpan } from '../telemetry/tracing.js';
import type { CanonicalEvent } from '../wire/canonical.js';
import type { GatewayContext } from './context.js';
import type { UpstreamResponse } from '../providers/upstream.js';

/** The status recorded for a client that went away before a response started (nginx's convention). */
export const CLIENT_CLOSED = 499;
// Not x-request-id: the client's x-request-id is the id of its usage row, never the upstream's.
export const FORWARDED_ERROR_HEADERS = ['content-type', 'retry-after', 'retry-after-ms'];

/** Everything observed about one request; folded into the usage record at the end. */
export interface Outcome {
  route: Route | null;
  status: RequestStatus;
  httpStatus: number;
  errorType: string;
  usage: Usage;
  usageSource: UsageSource;
  ttftMs: number | null;
  upstreamMs: number | null;
  /** The upstream call's span, closed with the record. */
  span: UpstreamSpan | null;
  /** The cost when it is not computed from the route (a combo's: the sum of its attempts'). */
  cost: Cost | null;
  autoSwitched: boolean;
  /** Time spent estimating usage after the answer (src/wire/estimate.ts): not part of the request's latency. */
  estimateMs: number;
  /** How far the answer has come while it streams (shared by a combo's attempts with the client's request). */
  readonly streamed: StreamedSoFar;
}

/** The answer so far, for the live monitor: characters of output streamed, and the output the request allows. */
export interface StreamedSoFar {
  chars: number;
  expected: number | null;
}

/** A fresh outcome; a combo attempt passes the client request's `streamed`, so its output counts there. */
export function newOutcome(streamed: StreamedSoFar = { chars: 0, expected: null }): Outcome {
  return {
    route: null, status: 'success', httpStatus: 200, errorType: '', usage: NO_USAGE, usageSource: 'none', ttftMs: null, upstreamMs: null,
    span: null, cost: null, autoSwitched: false, estimateMs: 0, streamed,
  };
}

/** About four characters a token: the live estimate of streamed output (the row gets the tokenizer's count). */
const CHARS_PER_TOKEN = 4;

/** How far a request in flight has come: the upstream's output count once reported, else its text's estimate. */
export function progressOf(o: Outcome): Progress {
  const reported = o.usageSource === 'reported' ? o.usage.output : null;
  return { streamedTokens: reported ?? Math.ceil(o.streamed.chars / CHARS_PER_TOKEN), estimatedTotal: o.streamed.expected };
}

export interface RequestMeta {
  readonly endpoint: string;
  readonly requestId: string;
  readonly startedAt: number;
  readonly t0: number;
  readonly requestedModel: string;
  readonly stream: boolean;
  /** Default `request`; a combo request, one of its attempts, or a keep-alive ping otherwise. */
  readonly kind?: RecordKind;
  readonly parentId?: string;
  readonly combo?: string;
  readonly attempt?: number;
}

/**
 * The request has begun: the ledger's begin sinks (the spool) get a snapshot of its record, built on demand from the
 * outcome and the meta as they stand then (`meta` is read at each call, so values learnt later are in it).
 */
export function begin(ctx: GatewayContext, req: FastifyRequest, o: Outcome, meta: () => RequestMeta): void {
  ctx.ledger.begin(meta().requestId, () => recordOf(o, meta(), req.apiKeyName), () => progressOf(o));
}

/** What every data-plane handler opens a request with: its clocks, id and trace, an empty outcome. */
export interface OpenedRequest {
  /** performance.now() at arrival: latencies are measured from it. */
  readonly t0: number;
  /** Wall-clock arrival (ms), the record's `ts`. */
  readonly startedAt: number;
  readonly requestId: string;
  readonly trace: RequestTrace;
  readonly o: Outcome;
}

/** Open a data-plane request on `endpoint`: clocks, a request id (also sent as `x-request-id`), its trace. */
export function openRequest(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, endpoint: string): OpenedRequest {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = uuidv7(startedAt);
  reply.header('x-request-id', requestId);
  return { t0, startedAt, requestId, trace: ctx.tracing.start(req.headers, endpoint), o: newOutcome() };
}

/** Fold the outcome into the one usage record and hand it to every ledger; ends the request's span. */
export function finish(ctx: GatewayContext, req: FastifyRequest, trace: RequestTrace, o: Outcome, m: RequestMeta): void {
  const record = recordOf(o, m, req.apiKeyName);
  ctx.ledger.publish(record);
  o.span?.close(null);
  trace.end(record);
}

/** The record of one combo attempt: to every ledger, and onto the attempt's own child span. */
export function finishAttempt(ctx: GatewayContext, req: FastifyRequest, o: Outcome, m: RequestMeta): UsageRecord {
  const record = recordOf(o, { ...m, kind: 'attempt' }, req.apiKeyName);
  ctx.ledger.publish(record);
  o.span?.close(record);
  return record;
}

export function recordOf(o: Outcome, m: RequestMeta, apiKeyName: string): UsageRecord {
  const totalMs = performance.now() - m.t0 - o.estimateMs;
  const route = o.route;
  return makeRecord({
    kind: m.kind ?? 'request',
    parentId: m.parentId ?? '',
    combo: m.combo ?? '',
    attempt: m.attempt ?? 0,
    connection: route?.connection?.name ?? '',
    autoSwitched: o.autoSwitched,
    requestId: m.requestId,
    startedAt: m.startedAt,
    endedAt: Date.now() - Math.round(o.estimateMs),
    endpoint: m.endpoint,
    provider: route?.providerId ?? OTHER,
    providerGroup: (route?.provider.group ?? '') as ProviderGroup | '',
    model: route?.model ?? OTHER,
    requestedModel: m.requestedModel,
    modelKnown: route?.modelConfig != null,
    apiKeyName,
    stream: m.stream,
    status: o.status,
    httpStatus: o.httpStatus,
    errorType: o.errorType,
    usage: o.usage,
    usageSource: o.usageSource,
    cost: o.cost ?? (route ? computeCost(route.provider, route.modelId, o.usage) : ZERO_COST),
    latency: m.stream ? { kind: 'stream', ttftMs: o.ttftMs, totalMs } : { kind: 'unary', totalMs },
    upstreamMs: o.upstreamMs,
  });
}

/**
 * Fill the usage the upstream did not report with estimates (src/wire/estimate.ts): the input from the request
 * that was sent, the output from `answer`. Called once the upstream accepted the request (2xx) and the answer is
 * over, and only when something was produced or nothing went wrong upstream: an answer that finished, a client that
 * went away, or a stream cut after it produced text. A stream broken by the upstream before any text (an error
 * event, a dropped connection) is not estimated: nothing shows it was billed. Reported buckets are kept; the
 * record's cost is computed from the estimates as usual. Never fails the request.
 */
export async function settleEstimate(o: Outcome, sent: SentRequest, answer: AnswerText): Promise<void> {
  const route = o.route;
  if (route === null || (o.status === 'failure' && !answer.seen)) return;
  const t = performance.now();
  try {
    const usage = await estimateMissing(o.usage, sent, answer, familyOf(route.provider.format, route.modelId));
    if (usage !== null) {
      o.usage = usage;
      o.usageSource = 'estimated';
    }
  } catch {
    // A tokenizer that cannot load leaves the buckets as reported (usage_source unchanged).
  } finally {
    o.estimateMs += performance.now() - t;
  }
}

/**
 * A request the gateway refused before the handler ran (malformed JSON, wrong content type, body too large):
 * it is still a client request, so it gets its record. Returns the request id for the error body.
 */
export function recordRejected(ctx: GatewayContext, req: FastifyRequest, e: TollgateError, endpoint: string): string {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = uuidv7(startedAt);
  const trace = ctx.tracing.start(req.headers, endpoint);
  const o = newOutcome();
  o.status = 'failure';
  o.httpStatus = e.status;
  o.errorType = e.code;
  finish(ctx, req, trace, o, { endpoint, requestId, startedAt, t0, requestedModel: '', stream: false });
  return requestId;
}

export function markAborted(o: Outcome, reply: FastifyReply): void {
  o.status = 'aborted';
  if (!reply.raw.headersSent) o.httpStatus = CLIENT_CLOSED;
  o.errorType = 'client_closed';
  // Nobody is left to answer: tell fastify the response is ours so it does not try to send one.
  if (!reply.sent) reply.hijack();
}

export function pickHeaders(h: UpstreamResponse['headers'], names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = h[n];
    if (typeof v === 'string') out[n] = v;
    else if (Array.isArray(v) && v.length > 0) out[n] = v[0]!;
  }
  return out;
}

/**
 * A model name as a header value: as is when it is visible ASCII (and spaces), else percent-encoded (a requested
 * model is client input and may hold anything, which a raw header value cannot).
 */
export function modelHeader(model: string): string {
  if (/^[\x20-\x7e]*$/.test(model)) return model;
  // Byte by byte (a lone surrogate becomes U+FFFD's bytes), where encodeURIComponent would throw.
  let out = '';
  for (const b of Buffer.from(model, 'utf8')) out += b > 0x20 && b < 0x7f && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** Write and respect back-pressure; resolves early if the client goes away. */
export function write(raw: ServerResponse, s: string | Uint8Array): Promise<void> | void {
  if (raw.destroyed) return;
  if (raw.write(s)) return;
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/** Take the response over from fastify and start an SSE stream (status 200, the headers the reply carries). */
export function openEventStream(reply: FastifyReply): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  // The headers set on the reply so far (x-request-id, the auto-switch marks) go with the stream's.
  raw.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  return raw;
}

/** End the stream; while shutting down, close the connection too, rather than leave it in keep-alive. */
export function closeEventStream(ctx: GatewayContext, raw: ServerResponse): void {
  if (raw.destroyed) return;
  const socket = raw.socket; // detached from the response once it finishes
  if (ctx.closing() && socket) raw.once('finish', () => socket.end());
  raw.end();
}

/**
 * What a stream of canonical events says about its request, folded as the events pass: usage (a later report
 * replaces an earlier one, so it is counted once), the time to the first output, the answer's text (for an estimate
 * when no usage comes), the response's id, model and finish reasons, and an upstream error event (a failure). One
 * reading for the translated and the passthrough paths.
 */
export class StreamFacts {
  id: string | null = null;
  model: string | null = null;
  readonly reasons: string[] = [];
  readonly #o: Outcome;
  readonly #answer: AnswerText;
  readonly #t0: number;

  constructor(o: Outcome, answer: AnswerText, t0: number) {
    this.#o = o;
    this.#answer = answer;
    this.#t0 = t0;
  }

  observe(e: CanonicalEvent): void {
    const o = this.#o;
    switch (e.type) {
      case 'usage':
        o.usage = e.usage;
        o.usageSource = 'reported';
        break;
      case 'text_delta':
        this.#answer.output(e.text);
        this.#firstOutput(e.text.length);
        break;
      case 'reasoning_delta':
        this.#answer.reasoning(e.text);
        this.#firstOutput(e.text.length);
        break;
      case 'tool_call_start':
        this.#answer.output(e.name);
        o.streamed.chars += e.name.length;
        break;
      case 'tool_call_delta':
        this.#answer.output(e.arguments);
        this.#firstOutput(e.arguments.length);
        break;
      case 'start':
        this.id = e.id || null;
        this.model = e.model || null;
        break;
      case 'finish':
        this.reasons.push(finishReasonOf(e.stopReason));
        break;
      case 'error':
        o.status = 'failure';
        o.errorType = 'upstream_stream_error';
        break;
      default:
        break;
    }
  }

  /** Output arrived (`chars` of it): the first sets the time to first token. */
  #firstOutput(chars: number): void {
    this.#o.streamed.chars += chars;
    if (this.#o.ttftMs === null) this.#o.ttftMs = performance.now() - this.#t0;
  }
}
