// The translating pipeline: a client in one wire format, a provider in any format. The client's codec parses the
// request into the canonical model, the provider's codec builds the upstream request and parses the answer (whole,
// or event by event), and the client's codec renders it back. One usage record per request, as on the chat path.
// OpenAI Chat to an OpenAI-format provider keeps its byte-for-byte fast path in chat.ts. A combo (or a target the
// budget auto-switch chose) also comes through here: combo/run.ts runs its attempts with `forward`.
//
// Stages: context (serveRequest) -> resolve target (the route's auto-switch answer, then a combo or a model) ->
// gates (the router's connect, in forward) -> forward or combo -> Upstream.callOnce -> account (the outcome, folded
// into the record by serveRequest) -> reply (the client codec).

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Target } from '../routing/auto-switch.js';
import { comboOf } from '../routing/combos.js';
import { resolveModel } from '../routing/resolve.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { MAX_REQUESTED_MODEL } from '../ledger/record.js';
import { runCombo } from './combo/run.js';
import { fitRequest, forward, type CodecLookup, type Exchange, type InboundSpec } from './forward.js';
import type { GatewayContext } from './context.js';
import { reportToRouter, serveRequest, type ClientRequest } from './request.js';

/** How a request comes to the translated path: the codecs, the endpoint it arrived on, and the route's target. */
export interface TranslatedRoute {
  readonly codecs: CodecLookup;
  readonly inbound: InboundSpec;
  /** The auto-switch's answer for the model the request names (undefined: it names none; its parse answers that). */
  readonly target: Target | undefined;
}

export function handleTranslated(ctx: GatewayContext, route: TranslatedRoute, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  return serveRequest(ctx, req, reply, route.inbound.endpoint, (request) => translate(request, route));
}

async function translate(request: ClientRequest, route: TranslatedRoute): Promise<void> {
  const { ctx, req, reply, trace, outcome } = request;
  const cfg = ctx.config.current;
  const { inbound } = route;
  const parsed = inbound.codec.parseRequest(req.body);
  // The body's model comes suffix-free from the codec; a model named in the URL is stripped here.
  const url = inbound.fromUrl?.(req);
  const asked = url ? url.model : parsed.model;
  const requestedModel = parseThinkingSuffix(asked).model.slice(0, MAX_REQUESTED_MODEL);
  const stream = url ? url.stream : parsed.stream;
  request.named(requestedModel, stream);
  outcome.streamed.expected = parsed.maxTokens ?? null;
  // The budget auto-switch may have rewritten the target (a free model or combo, which may carry its own suffix).
  const target = route.target ?? { model: asked, switched: false };
  request.switchedTo(target);
  const named = url || target.switched ? parseThinkingSuffix(target.model) : { model: parsed.model, thinking: undefined };
  const exchange: Exchange = {
    ctx, codecs: route.codecs, inbound, req, reply, trace, requestId: request.requestId, startedAt: request.startedAt, t0: request.t0, stream,
    // A suffix on the model the URL or the auto-switch named (`fb(high)`) is the request's thinking, for a combo's
    // members too (they read it from here), as a suffix in the body is.
    parsed: { ...parsed, model: requestedModel, thinking: named.thinking ?? parsed.thinking },
  };
  const comboConfig = comboOf(cfg, named.model);
  if (comboConfig) {
    request.facts.combo = named.model;
    await runCombo(exchange, { name: named.model, config: comboConfig, outcome });
    return;
  }
  outcome.route = resolveModel(cfg, named.model);
  trace.routed(outcome.route.model, outcome.route.providerId, outcome.route.modelId);
  const canonical = fitRequest(exchange.parsed, outcome.route, { model: requestedModel, thinking: named.thinking, stream });
  reportToRouter(ctx, outcome, await forward(exchange, { route: outcome.route, canonical, outcome, t0: request.t0, failures: 'answer' }));
}
