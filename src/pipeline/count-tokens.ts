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
import { FORWARDED_ERROR_HEADERS, pickHeaders } from './reply.js';
import { rewriteBody, upstreamHeaders } from './passthrough.js';
import { DROPPED_PARAMS_HEADER, droppedHeader } from './forward.js';
import { relayedText, watchClient, type UpstreamCall } from './upstream.js';

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
 * Make the counting call and answer the client with what came back (status, body, retry headers). A 401 is told to
 * the router (`refused`): an OAuth token the upstream refused is refreshed before its next use, as after a message.
 */
async function answerCount(reply: FastifyReply, refused: () => void, count: (signal: ClientAbort) => Promise<UpstreamCall>): Promise<void> {
  const client = watchClient(reply);
  try {
    const call = await count(client.signal);
    const { res } = call;
    if (res.status === 401) refused();
    // Any answer's text, not only an error's: a counter that quotes its headers in a 200 would hand the key on too.
    const text = relayedText(call, await res.text());
    const headers = res.status >= 200 && res.status < 300 ? { 'content-type': 'application/json' } : pickHeaders(res.headers, FORWARDED_ERROR_HEADERS);
    await reply.code(res.status).headers(headers).send(text);
  } catch (err) {
    if (client.signal.aborted) return reply.hijack();
    throw err instanceof TollgateError ? err : classifyTransportError(err);
  } finally {
    client.release();
  }
}
