// Token counters, answered where the target can answer them: POST /v1/messages/count_tokens (Anthropic's) by an
// Anthropic-format provider's own /v1/messages/count_tokens, and Gemini's `{model}:countTokens` by a Gemini-format
// provider's own, passed through. Other targets get TOLLGATE_ERR_NOT_SUPPORTED rather than a guess. Counting
// consumes no tokens, so it leaves no usage row.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { geminiSameFormat } from '../wire/gemini/same-format.js';
import { isObj, type Json } from '../wire/same-format.js';
import type { UpstreamRequest } from '../wire/types.js';
import { TollgateError } from '../core/errors.js';
import { classifyTransportError } from '../providers/transport.js';
import type { ClientAbort } from '../providers/upstream.js';
import { anthropicCodec } from '../wire/anthropic/index.js';
import { resolveModel, type Route } from '../routing/resolve.js';
import { comboOf } from '../routing/combos.js';
import { anthropicSameFormat } from '../wire/anthropic/same-format.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import type { GatewayContext } from './context.js';
import { rewriteBody, upstreamHeaders } from './passthrough.js';
import { DROPPED_PARAMS_HEADER, droppedHeader } from './forward.js';
import { errorAnswer, notJson, readUpstreamError, relayedText, watchClient, type UpstreamCall } from './upstream.js';
import { newOutcome } from './outcome.js';

export const COUNT_TOKENS_ROUTE = '/v1/messages/count_tokens';

export async function handleCountTokens(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const body = req.body as Record<string, unknown> | null;
  // The same body as /v1/messages without max_tokens; parsed with a placeholder so validation is shared. What is
  // counted is the client's body itself (its thinking, MCP servers, tools' options, citations: all change the count).
  const canonical = anthropicCodec.parseRequest(body !== null && typeof body === 'object' ? { ...body, max_tokens: 1, stream: false } : body);
  const named = parseThinkingSuffix(canonical.model);
  const resolved = countTarget(ctx, named.model, 'count_tokens');
  if (resolved.provider.format !== 'anthropic') {
    throw new TollgateError(
      'TOLLGATE_ERR_NOT_SUPPORTED',
      `count_tokens is answered by Anthropic-format providers only; '${resolved.model}' is served by a '${resolved.provider.format}' provider`,
      { param: 'model' },
    );
  }
  const route = await ctx.router.connect(resolved);
  const sent: Json = { ...(body as Json) };
  // What the message path would drop for this model is dropped here too, and listed the same way.
  const removed = rewriteBody(anthropicSameFormat, sent, route, named.thinking);
  if (removed.length > 0) reply.header(DROPPED_PARAMS_HEADER, droppedHeader(removed));
  // Fields of a message request the counter does not take.
  for (const field of ['max_tokens', 'stream', 'service_tier']) delete sent[field];
  const path = `${anthropicSameFormat.upstreamPath(route.provider, route.modelId, { stream: false, action: '', alt: '' })}/count_tokens`;
  const request: UpstreamRequest = { path, headers: upstreamHeaders(anthropicSameFormat, req, route, false), body: sent };
  await answerCount(reply, () => ctx.router.tokenRefused(route), (signal) => ctx.upstream.send(route, request, { stream: false, signal }));
}

/** A counter's target: a configured `<provider>/<model>`; a combo is not counted (which member would be called?). */
function countTarget(ctx: GatewayContext, model: string, what: string): Route {
  if (comboOf(ctx.config.current, model) !== undefined) {
    throw new TollgateError('TOLLGATE_ERR_NOT_SUPPORTED', `${what} is not answered for a combo ('${model.slice(0, 100)}'): name one of its members`, { param: 'model' });
  }
  return resolveModel(ctx.config.current, model);
}

/**
 * Gemini's `{model}:countTokens` for `model` (the URL's, suffix allowed): passed through to a Gemini-format provider
 * as the client sent it, with the client's protocol headers; a `generateContentRequest.model` names the provider's id.
 */
export async function handleGeminiCountTokens(ctx: GatewayContext, model: string, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!isObj(req.body)) throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'request body must be a JSON object');
  const resolved = countTarget(ctx, parseThinkingSuffix(model).model, 'countTokens');
  if (resolved.provider.format !== 'gemini') {
    throw new TollgateError(
      'TOLLGATE_ERR_NOT_SUPPORTED',
      `countTokens is answered by Gemini-format providers only; '${resolved.model}' is served by a '${resolved.provider.format}' provider`,
      { param: 'model' },
    );
  }
  const route = await ctx.router.connect(resolved);
  const body: Json = req.body;
  const id = route.modelId;
  if (isObj(body.generateContentRequest)) body.generateContentRequest.model = id.startsWith('tunedModels/') ? id : `models/${id.replace(/^models\//, '')}`;
  const path = geminiSameFormat.upstreamPath(route.provider, route.modelId, { stream: false, action: 'countTokens', alt: '' });
  const request: UpstreamRequest = { path, headers: upstreamHeaders(geminiSameFormat, req, route, false), body };
  await answerCount(reply, () => ctx.router.tokenRefused(route), (signal) => ctx.upstream.send(route, request, { stream: false, signal }));
}

/**
 * Make the counting call and answer the client with what came back: an error's status, body and retry headers; a
 * count as JSON. What the message paths refuse is refused here too (docs/errors.md): a redirect, a status past 599,
 * a 2xx whose body is not JSON (a proxy's login page) or is an error and no count, each a 502 UPSTREAM_PROTOCOL.
 * A 401 is told to the router (`refused`): an OAuth token the upstream refused is refreshed before its next use.
 */
async function answerCount(reply: FastifyReply, refused: () => void, count: (signal: ClientAbort) => Promise<UpstreamCall>): Promise<void> {
  const client = watchClient(reply);
  try {
    const call = await count(client.signal);
    if (call.res.status === 401) refused();
    // No row: the outcome is only what readUpstreamError writes to.
    const failure = await readUpstreamError(call, newOutcome());
    if (failure !== null) {
      await reply.code(failure.status).headers(failure.headers).send(failure.body);
      return;
    }
    // Any answer's text, not only an error's: a counter that quotes its headers in a 200 would hand the key on too.
    const text = relayedText(call, await call.res.text());
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw notJson(call);
    }
    const e = errorAnswer(call, json);
    if (e !== null) throw e;
    await reply.code(call.res.status).header('content-type', 'application/json').send(text);
  } catch (err) {
    if (client.signal.aborted) return reply.hijack();
    throw err instanceof TollgateError ? err : classifyTransportError(err);
  } finally {
    client.release();
  }
}
