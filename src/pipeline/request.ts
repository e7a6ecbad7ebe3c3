// One client request on a data-plane route, from its opening to its record: the one wrapper every handler runs in.
// `serveRequest` opens it (clocks, request id and `x-request-id`, trace, an empty outcome), tells the ledger's begin
// sinks it began (the spool keeps a snapshot; the live monitor watches its progress), runs the handler, answers any
// error on the one error path, and finally folds the outcome into the one usage record for every ledger.

import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError, errorBody, toTollgateError } from '../core/errors.js';
import { timedOutSockets } from '../core/http-errors.js';
import type { UsageRecord } from '../ledger/record.js';
import { uuidv7 } from '../ledger/uuidv7.js';
import type { Target } from '../routing/auto-switch.js';
import { errorFailure, type UpstreamFailure } from '../routing/failures.js';
import type { RequestTrace } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { newOutcome, progressOf, recordOf, type Outcome, type RequestMeta } from './outcome.js';
import { CLIENT_CLOSED, modelHeader } from './reply.js';
import { streamFailure } from './upstream.js';

/** What the record says of the request itself, learnt by the handler as it reads the request. */
export interface RequestFacts {
  /** The model the client asked for (suffix removed, at most MAX_REQUESTED_MODEL characters). */
  requestedModel: string;
  stream: boolean;
  /** The combo the request named ('' for a model): its row is then of kind `combo`. */
  combo: string;
}

/** When the requests the start held before their handler arrived (held.ts): their clocks start then. */
const arrivals = new WeakMap<FastifyRequest, { readonly t0: number; readonly startedAt: number }>();

/** `req` arrived now and waits before its handler: its record is timed from now. */
export function arrivedHeld(req: FastifyRequest): void {
  arrivals.set(req, { t0: performance.now(), startedAt: Date.now() });
}

/** A data-plane request being served: what the handler needs, and what it fills in. */
export class ClientRequest {
  readonly ctx: GatewayContext;
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  /** performance.now() at arrival: latencies are measured from it. */
  readonly t0: number;
  /** Wall-clock arrival (ms), the record's `ts`. */
  readonly startedAt: number;
  readonly requestId: string;
  readonly endpoint: string;
  readonly trace: RequestTrace;
  /** The trace's id ('' without one), read once: the span's context does not change. */
  readonly traceId: string;
  readonly outcome: Outcome;
  readonly facts: RequestFacts = { requestedModel: '', stream: false, combo: '' };

  constructor(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, endpoint: string) {
    this.ctx = ctx;
    this.req = req;
    this.reply = reply;
    this.endpoint = endpoint;
    // A request the start held before its handler (held.ts) is timed from its arrival, the wait included.
    const arrival = arrivals.get(req);
    this.t0 = arrival?.t0 ?? performance.now();
    this.startedAt = arrival?.startedAt ?? Date.now();
    this.requestId = uuidv7(this.startedAt);
    reply.header('x-request-id', this.requestId);
    this.trace = ctx.tracing.start(req.headers, endpoint);
    this.traceId = this.trace.traceId;
    this.outcome = newOutcome();
  }

  /** The request's meta as it stands (read again at each snapshot, so what was learnt since is in it). */
  meta(): RequestMeta {
    return metaOf(this.endpoint, this.requestId, this.startedAt, this.t0, this.traceId, this.facts);
  }

  /** The client named `requestedModel` (suffix removed) and asked for a stream or not; the answer says so too. */
  named(requestedModel: string, stream: boolean): void {
    this.facts.requestedModel = requestedModel;
    this.facts.stream = stream;
    // The answer names the model that served it (after an auto-switch or a combo); this names the one asked for.
    this.reply.header('x-tollgate-requested-model', modelHeader(requestedModel));
  }

  /** The route's auto-switch answer: when it switched, the outcome, the answer's headers and the metric say so. */
  switchedTo(target: Target): void {
    if (!target.switched) return;
    this.outcome.autoSwitched = true;
    this.reply.header('x-tollgate-auto-switched', 'true').header('x-tollgate-original-model', modelHeader(this.facts.requestedModel));
  }
}

/** A request's meta from its fixed parts and its facts as they stand. */
function metaOf(endpoint: string, requestId: string, startedAt: number, t0: number, traceId: string, facts: RequestFacts): RequestMeta {
  const { requestedModel, stream, combo } = facts;
  return { endpoint, requestId, startedAt, t0, requestedModel, stream, kind: combo ? 'combo' : 'request', combo, traceId };
}

/**
 * Tell the ledger's begin sinks that `request` began. They keep its snapshot and progress while it runs (the spool,
 * for its markers; the live monitor), in maps as old as the process; so the two functions hold only what they read
 * (the outcome, the facts, the fixed parts of the meta and the key's name), never the request: through it the Fastify
 * request, reply, body and headers were reachable from those maps, and V8 then moved much of every request's objects
 * out of the young generation (docs/benchmarks.md, "What the record kept alive").
 */
function announce(ctx: GatewayContext, request: ClientRequest, apiKeyName: string): void {
  const { outcome, facts, endpoint, requestId, startedAt, t0, traceId } = request;
  ctx.ledger.begin(
    requestId,
    () => recordOf(outcome, metaOf(endpoint, requestId, startedAt, t0, traceId, facts), apiKeyName),
    () => progressOf(outcome),
  );
}

/** Serve one data-plane request on `endpoint` with `handle`, from its opening to its record. */
export async function serveRequest(
  ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, endpoint: string, handle: (request: ClientRequest) => Promise<void>,
): Promise<void> {
  const request = new ClientRequest(ctx, req, reply, endpoint);
  const { outcome } = request;
  announce(ctx, request, req.apiKeyName);
  try {
    await handle(request);
  } catch (err) {
    // A combo's attempts told the router about their own connections.
    failRequest(request, err, { reportToRouter: request.facts.combo === '' });
  } finally {
    finish(ctx, req, request.trace, outcome, request.meta());
  }
}

/** Fold the outcome into the one usage record and hand it to every ledger; ends the request's span. */
export function finish(ctx: GatewayContext, req: FastifyRequest, trace: RequestTrace, outcome: Outcome, meta: RequestMeta): void {
  const record = recordOf(outcome, meta, req.apiKeyName);
  ctx.ledger.publish(record);
  outcome.span?.close(null);
  trace.end(record);
}

/** The record of one combo attempt: to every ledger, and onto the attempt's own child span. */
export function finishAttempt(ctx: GatewayContext, req: FastifyRequest, outcome: Outcome, meta: RequestMeta): UsageRecord {
  const record = recordOf(outcome, { ...meta, kind: 'attempt' }, req.apiKeyName);
  ctx.ledger.publish(record);
  outcome.span?.close(record);
  return record;
}

/**
 * Tell the router how the call went (cooldowns): `failed` when it failed before an answer, else from the outcome.
 * A client that went away says nothing about the provider; a request that never reached a connection neither.
 */
export function reportToRouter(ctx: GatewayContext, outcome: Outcome, failed: UpstreamFailure | null): void {
  const route = outcome.route;
  if (route?.connection === undefined || outcome.status === 'aborted') return;
  if (failed !== null) ctx.router.report(route, failed);
  else if (outcome.status === 'success') ctx.router.report(route, null);
  else ctx.router.report(route, streamFailure(outcome.errorType));
}

/**
 * The one error path of a data-plane handler: what was thrown becomes the outcome's failure, the route's connection
 * is told (not for a combo, whose attempts told their own), it is logged at its code's level, and the client gets
 * the error shape unless its answer has already started.
 */
export function failRequest(request: ClientRequest, err: unknown, opts: { readonly reportToRouter: boolean }): void {
  const { outcome, reply } = request;
  const e = err instanceof TollgateError ? err : new TollgateError('TOLLGATE_ERR_INTERNAL', 'internal error', { cause: err });
  outcome.status = 'failure';
  outcome.httpStatus = e.status;
  outcome.errorType = e.code;
  if (opts.reportToRouter) reportToRouter(request.ctx, outcome, errorFailure(e));
  request.req.log[e.level]({ err: e.cause ?? e, code: e.code, requestId: request.requestId }, e.message);
  if (!reply.sent && !reply.raw.headersSent) reply.code(e.status).send(errorBody(e, request.requestId));
}

/** Refusals of the gate itself: not requests to record (an attacker's probes would fill the record). */
const GATE_REFUSALS: ReadonlySet<string> = new Set(['TOLLGATE_ERR_UNAUTHORIZED', 'TOLLGATE_ERR_REAUTH_REQUIRED', 'TOLLGATE_ERR_FORBIDDEN', 'TOLLGATE_ERR_RATE_LIMITED']);

/** Whether `err` is the gate's refusal: it is answered as it is, before anything the route would say (a 404 included). */
export function isGateRefusal(err: unknown): boolean {
  return GATE_REFUSALS.has(toTollgateError(err).code);
}

/**
 * The app's error handler: an error thrown before a handler answered (malformed JSON, wrong content type, body too
 * large, the gate's refusals, a bug). On a data-plane route (`endpoint`) it is still a client request, so it gets its
 * record and its `x-request-id`, the gate's refusals excepted. A client that went away while its body was arriving (a
 * reset, a chunked body never finished) is no error of anyone's: recorded `aborted` (499 `client_closed`, as a client
 * that leaves later is), logged at info, and not answered: nobody is there.
 */
export function answerRefusal(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, err: unknown, endpoint: string | undefined): FastifyReply | undefined {
  const timedOut = req.raw.socket === null ? undefined : timedOutSockets.get(req.raw.socket);
  if (clientLeft(err, req) && timedOut !== undefined) {
    // Cut by server.request_timeout_s, and answered 400 on the socket already (core/http-errors.ts): the row says so,
    // under the request id that answer carried.
    if (endpoint !== undefined) recordRejected(ctx, req, endpoint, { status: 'failure', httpStatus: 400, errorType: 'TOLLGATE_ERR_BAD_REQUEST', requestId: timedOut });
    reply.hijack();
    return undefined;
  }
  if (clientLeft(err, req)) {
    req.log.info({ code: 'client_closed', path: req.url.split('?')[0] }, 'the client went away before its request arrived');
    if (endpoint !== undefined) recordRejected(ctx, req, endpoint, { status: 'aborted', httpStatus: CLIENT_CLOSED, errorType: 'client_closed' });
    reply.hijack();
    reply.raw.destroy();
    return undefined;
  }
  const e = logRefusal(req, err);
  if (endpoint === undefined || GATE_REFUSALS.has(e.code)) return reply.code(e.status).send(errorBody(e, null));
  const id = recordRejected(ctx, req, endpoint, { status: 'failure', httpStatus: e.status, errorType: e.code });
  return reply.code(e.status).header('x-request-id', id).send(errorBody(e, id));
}

/** A refusal's error, logged at its level (an internal one with its stack); the path only: a Gemini client may carry its key in the query. */
export function logRefusal(req: FastifyRequest, err: unknown): TollgateError {
  const e = toTollgateError(err);
  req.log[e.level]({ err: e.code === 'TOLLGATE_ERR_INTERNAL' ? err : undefined, code: e.code, path: req.url.split('?')[0] }, e.message);
  return e;
}

/** The request's socket closed under it while its body was read (Node's `aborted`, ECONNRESET). */
export function clientLeft(err: unknown, req: FastifyRequest): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (e?.code === 'ECONNRESET' || e?.message === 'aborted') && (req.raw.destroyed || req.raw.socket?.destroyed !== false);
}

/** How a request refused or abandoned before its handler ran ended; `requestId` if its answer already carried one. */
type Rejection = Pick<Outcome, 'status' | 'httpStatus' | 'errorType'> & { readonly requestId?: string };

/** Record a request refused or abandoned before its handler ran. Returns its request id. */
function recordRejected(ctx: GatewayContext, req: FastifyRequest, endpoint: string, how: Rejection): string {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = how.requestId ?? uuidv7(startedAt);
  const trace = ctx.tracing.start(req.headers, endpoint);
  const outcome = newOutcome();
  outcome.status = how.status;
  outcome.httpStatus = how.httpStatus;
  outcome.errorType = how.errorType;
  finish(ctx, req, trace, outcome, { endpoint, requestId, startedAt, t0, requestedModel: '', stream: false, traceId: trace.traceId });
  return requestId;
}
