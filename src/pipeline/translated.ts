// The translating pipeline: a client in one wire format, a provider in any format. The client's codec parses the
// request into the canonical model, the provider's codec builds the upstream request and parses the answer (whole,
// or event by event), and the client's codec renders it back. One usage record per request, as on the chat path.
// OpenAI Chat to an OpenAI-format provider keeps its byte-for-byte fast path in chat.ts. A combo (or a target the
// budget auto-switch chose) also comes through here: combo.ts runs its attempts with `forward` below.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { autoSwitch } from '../routing/auto-switch.js';
import { comboOf } from '../routing/combos.js';
import { resolveModel } from '../routing/resolve.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import { runCombo } from './combo/run.js';
import { fitRequest, forward, type Exchange, type InboundSpec, type CodecLookup } from './forward.js';

import type { GatewayContext } from './context.js';
import { begin, openRequest, finish, modelHeader, type RequestMeta } from './outcome.js';
import { settleRoute, failRequest } from './upstream-call.js';

export async function handleTranslated(
  ctx: GatewayContext, codecs: CodecLookup, inbound: InboundSpec, req: FastifyRequest, reply: FastifyReply,
): Promise<void> {
  const { t0, startedAt, requestId, trace, o } = openRequest(ctx, req, reply, inbound.endpoint);
  const cfg = ctx.config.current;
  let requestedModel = '';
  let stream = false;
  let combo = '';
  const meta = (): RequestMeta => ({ endpoint: inbound.endpoint, requestId, startedAt, t0, requestedModel, stream, kind: combo ? 'combo' : 'request', combo });
  begin(ctx, req, o, meta);
  try {
    const parsed = inbound.codec.parseRequest(req.body);
    // The body's model comes suffix-free from the codec; a model named in the URL is stripped here.
    const url = inbound.fromUrl?.(req);
    const asked = url ? url.model : parsed.model;
    requestedModel = parseThinkingSuffix(asked).model.slice(0, MAX_REQUESTED_MODEL);
    stream = url ? url.stream : parsed.stream;
    o.streamed.expected = parsed.maxTokens ?? null;
    // The answer names the model that served it (after an auto-switch or a combo); this names the one asked for.
    reply.header('x-tollgate-requested-model', modelHeader(requestedModel));
    // The budget auto-switch may rewrite the target (a free model or combo, which may carry its own suffix).
    const target = autoSwitch(cfg, asked, ctx.router.budget);
    if (target.switched) {
      o.autoSwitched = true;
      reply.header('x-tollgate-auto-switched', 'true').header('x-tollgate-original-model', modelHeader(requestedModel));
    }
    const named = url || target.switched ? parseThinkingSuffix(target.model) : { model: parsed.model, thinking: undefined };
    const x: Exchange = { ctx, codecs, inbound, req, reply, trace, requestId, startedAt, t0, stream, parsed: { ...parsed, model: requestedModel } };
    const comboConfig = comboOf(cfg, named.model);
    if (comboConfig) {
      combo = named.model;
      await runCombo(x, combo, comboConfig, o);
      return;
    }
    o.route = resolveModel(cfg, named.model);
    trace.routed(o.route.model, o.route.providerId, o.route.modelId);
    const canonical = fitRequest(x.parsed, o.route, requestedModel, named.thinking, stream);
    settleRoute(ctx, o, await forward(x, o.route, canonical, o, t0, false));
  } catch (err) {
    failRequest(ctx, req, reply, o, err, { requestId, settleRoute: !combo });
  } finally {
    finish(ctx, req, trace, o, meta());
  }
}

/**
 * One upstream call, answered to the client in its format, under the name of the model that served it. Returns null once the client has its answer (or went
 * away). With `defer`, a failure before any byte reached the client is returned instead of sent, so a combo can try
 * its next member; a stream then opens only with its first output. Without `defer`, failures are answered here
 * (an upstream error status relayed as it came) or thrown as a TollgateError for the handler to answer.
 * The parameters the request does not carry are listed (listDropped) before the call: `opts.dropped` replaces the
 * list computed from this request (a fusion judge lists what its panel's requests dropped).
 */
