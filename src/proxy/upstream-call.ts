// One upstream call as every data-plane pipeline makes it: the client's disconnect aborts it, the child span and
// trace headers go with it, transport failures become classified errors, and an upstream error status is relayed
// to the client unchanged (status, body, retry headers) and recorded as a failure.

import { performance } from 'node:perf_hooks';
import type { FastifyReply } from 'fastify';
import type { UpstreamRequest } from '../providers/types.js';
import type { Route } from '../routing/resolve.js';
import type { RequestTrace, UpstreamSpan } from '../telemetry/tracing.js';
import type { GatewayContext } from './context.js';
import { ClientAbort, classifyTransportError, type UpstreamResponse } from './dispatch.js';
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
  const tUp = performance.now();
  const stamp = () => {
    o.upstreamMs = performance.now() - tUp;
  };
  try {
    const res = await ctx.dispatcher.send(route.providerId, route.provider, upReq, { stream, signal: gone, extraHeaders: up.headers });
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

/** True (and the client answered) when the upstream answered with an error status. */
export async function relayUpstreamError(call: UpstreamCall, reply: FastifyReply, o: Outcome): Promise<boolean> {
  const { res } = call;
  if (res.status >= 200 && res.status < 300) return false;
  const text = await res.text();
  call.stamp();
  o.status = 'failure';
  o.httpStatus = res.status;
  o.errorType = String(res.status);
  call.span.end(res.status, String(res.status));
  reply.code(res.status).headers(pickHeaders(res.headers, FORWARDED_ERROR_HEADERS)).send(text);
  return true;
}

/** After the call: a client that went away makes the outcome `aborted`; anything else is a classified error. */
export function settleFailure(err: unknown, call: UpstreamCall, reply: FastifyReply, o: Outcome): void {
  if (call.gone.aborted) {
    markAborted(o, reply);
    return;
  }
  throw classifyTransportError(err);
}
