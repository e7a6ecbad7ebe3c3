// One upstream call as every data-plane pipeline makes it: the client's disconnect aborts it, the child span and
// trace headers go with it, transport failures become classified errors, and an upstream error status is relayed
// to the client unchanged (status, body, retry headers) and recorded as a failure.

import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError, errorBody } from '../core/errors.js';
import type { UpstreamRequest } from '../wire/types.js';
import { errorFailure, httpFailure, type UpstreamFailure } from '../routing/failures.js';
import type { Route } from '../routing/resolve.js';
import type { RequestTrace, UpstreamSpan } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { classifyTransportError } from '../providers/transport.js';
import { ClientAbort, type UpstreamResponse } from '../providers/upstream.js';
import { FORWARDED_ERROR_HEADERS, markAborted, pickHeaders, type Outcome } from './outcome.js';

export interface UpstreamCall {
  readonly res: UpstreamResponse;
  /** Aborted when the client goes away. */
  readonly gone: ClientAbort;
  readonly span: UpstreamSpan;
  /** Record the time spent upstream so far in the outcome. */
  stamp(): void;
  /** Stop watching the client connection. */
  release(): void;
}

/** Send `upReq`; null when the client went away first (the outcome is then `aborted`). */
export async function callUpstream(
  ctx: GatewayContext, route: Route, upReq: UpstreamRequest, stream: boolean, trace: RequestTrace, reply: FastifyReply, o: Outcome,
): Promise<UpstreamCall | null> {
  const gone = new ClientAbort();
  const onClose = () => {
    if (!reply.raw.writableFinished) gone.abort();
  };
  reply.raw.on('close', onClose);
  const release = () => reply.raw.off('close', onClose);
  const up = trace.upstream(route.provider.base_url, upReq.path, route.providerId);
  o.span = up.span;
  const tUp = performance.now();
  const stamp = () => {
    o.upstreamMs = performance.now() - tUp;
  };
  try {
    // One pool per connection: a region- or cluster-specific key has its own origin.
    const res = await ctx.dispatcher.send(route.connection?.id ?? route.providerId, route.provider, upReq, { stream, signal: gone, extraHeaders: up.headers });
    return { res, gone, span: up.span, stamp, release };
  } catch (err) {
    stamp();
    release();
    if (gone.aborted) {
      up.span.end(null, 'aborted');
      markAborted(o, reply);
      return null;
    }
    const e = classifyTransportError(err);
    up.span.end(null, e.code);
    throw e;
  }
}

/** The failure when the upstream answered with an error status (its body read, the outcome a failure); else null. */
export async function readUpstreamError(call: UpstreamCall, o: Outcome): Promise<UpstreamFailure | null> {
  const { res } = call;
  if (res.status >= 200 && res.status < 300) return null;
  const text = await res.text();
  call.stamp();
  o.status = 'failure';
  o.httpStatus = res.status;
  o.errorType = String(res.status);
  call.span.end(res.status, String(res.status));
  return httpFailure(res.status, pickHeaders(res.headers, FORWARDED_ERROR_HEADERS), text);
}

/** Answer the client with a failure: the upstream's status, body and retry headers as they came, or our error. */
export function sendFailure(reply: FastifyReply, f: UpstreamFailure, requestId: string): void {
  if (reply.sent || reply.raw.headersSent) return;
  if (f.body !== null) reply.code(f.status).headers(f.headers).send(f.body);
  else reply.code(f.status).headers(f.headers).send(errorBody(f.error!, requestId));
}

/** The failure (the client answered with it) when the upstream answered with an error status; else null. */
export async function relayUpstreamError(call: UpstreamCall, reply: FastifyReply, o: Outcome): Promise<UpstreamFailure | null> {
  const f = await readUpstreamError(call, o);
  if (f !== null) sendFailure(reply, f, '');
  return f;
}

/** After the call: a client that went away makes the outcome `aborted`; anything else is a classified error. */
export function settleFailure(err: unknown, call: UpstreamCall, reply: FastifyReply, o: Outcome): void {
  if (call.gone.aborted) {
    markAborted(o, reply);
    return;
  }
  throw classifyTransportError(err);
}

/**
 * Tell the router how the call went (cooldowns): `failed` when it failed before an answer, else from the outcome.
 * A client that went away says nothing about the provider; a request that never reached a connection neither.
 */
export function settleRoute(ctx: GatewayContext, o: Outcome, failed: UpstreamFailure | null): void {
  const route = o.route;
  if (route?.connection === undefined || o.status === 'aborted') return;
  if (failed !== null) ctx.router.report(route, failed);
  else if (o.status === 'success') ctx.router.report(route, null);
  else ctx.router.report(route, streamFailure(o.errorType));
}

/** A stream that failed after it started: the connection cools, the client already has its bytes. */
export function streamFailure(reason: string): UpstreamFailure {
  return { status: 502, body: null, headers: {}, error: null, retryable: false, cool: true, quotaExhausted: false, retryAfterMs: null, reason };
}

/**
 * The one error path of a data-plane handler: what was thrown becomes the outcome's failure, the route's connection
 * is settled with it (not for a combo, whose attempts settled their own), it is logged at its code's level, and the
 * client gets the error shape unless its answer has already started.
 */
export function failRequest(
  ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, o: Outcome, err: unknown, opts: { requestId: string; settleRoute: boolean },
): void {
  const e = err instanceof TollgateError ? err : new TollgateError('TOLLGATE_ERR_INTERNAL', 'internal error', { cause: err });
  o.status = 'failure';
  o.httpStatus = e.status;
  o.errorType = e.code;
  if (opts.settleRoute) settleRoute(ctx, o, errorFailure(e));
  req.log[e.level]({ err: e.cause ?? e, code: e.code, requestId: opts.requestId }, e.message);
  if (!reply.sent && !reply.raw.headersSent) reply.code(e.status).send(errorBody(e, opts.requestId));
}
