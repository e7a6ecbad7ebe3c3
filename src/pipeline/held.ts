// A request held before its handler by the start's hold (routing/start-hold.ts): its routing reads a budget or quota
// figure the first evaluation after the start has not produced yet. It waits for it (bounded by the hold), timed from
// its arrival; a client that leaves meanwhile is recorded as one that left before its upstream call (`aborted`, 499
// `client_closed`, what markAborted records on every path), and nothing is sent upstream.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import type { GatewayContext } from './context.js';
import { markAborted } from './reply.js';
import { arrivedHeld, serveRequest } from './request.js';
import { watchClient } from './upstream.js';

export interface HeldRequest {
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  /** The usage-row endpoint of the route. */
  readonly endpoint: string;
  /** The model or combo the request names, as the client wrote it. */
  readonly asked: string;
  /** A stream was asked for (a Gemini URL's action); none: the body's `stream`, read only when the request is held. */
  readonly stream?: boolean;
}

/**
 * Wait for the start's hold to release. True: route the request now; false: it is answered and recorded here. A client
 * that left (its response closed, or its socket destroyed: the stop's deadline closes sockets before their responses
 * say so) is recorded as gone; a request still held when the stop began is refused with a 503 (retry elsewhere), not
 * routed on figures nobody knows, so the stop does not wait for a paid call made for a client about to be cut off.
 */
export async function waitForFigures(ctx: GatewayContext, held: HeldRequest): Promise<boolean> {
  const { req, reply } = held;
  arrivedHeld(req);
  const watch = watchClient(reply);
  if (reply.raw.destroyed && !reply.raw.writableFinished) watch.signal.abort();
  const gone = new Promise<void>((resolve) => (watch.signal.aborted ? resolve() : watch.signal.once('abort', resolve)));
  try {
    await ctx.router.hold.wait(gone);
  } finally {
    watch.release();
  }
  const left = watch.signal.aborted || reply.raw.destroyed || req.raw.socket?.destroyed === true;
  if (!left && !ctx.router.hold.stopped) return true;
  await serveRequest(ctx, req, reply, held.endpoint, async (request) => {
    request.named(parseThinkingSuffix(held.asked).model.slice(0, MAX_REQUESTED_MODEL), held.stream ?? (req.body as { stream?: unknown } | null)?.stream === true);
    if (left) return markAborted(request.outcome, reply);
    reply.header('retry-after', '1');
    throw new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', 'the gateway is stopping before the budget and quota figures this request is routed by were known; retry');
  });
  return false;
}
