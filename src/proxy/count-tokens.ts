// POST /v1/messages/count_tokens: Anthropic's token counter, answered where the target can answer it, which is
// an Anthropic-format provider (its own /v1/messages/count_tokens). Other targets get TOLLGATE_ERR_NOT_SUPPORTED
// rather than a guess. Counting consumes no tokens, so it leaves no usage row.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { TollgateError } from '../errors.js';
import { anthropicCodec } from '../providers/anthropic/index.js';
import { resolveModel } from '../routing/resolve.js';
import { parseThinkingSuffix } from '../translate/thinking.js';
import type { GatewayContext } from './context.js';
import { ClientAbort, classifyTransportError } from './dispatch.js';
import { FORWARDED_ERROR_HEADERS, pickHeaders } from './outcome.js';

export const COUNT_TOKENS_ROUTE = '/v1/messages/count_tokens';

export async function handleCountTokens(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const body = req.body as Record<string, unknown> | null;
  // The same body as /v1/messages without max_tokens; parsed with a placeholder so validation is shared.
  const canonical = anthropicCodec.parseRequest(body !== null && typeof body === 'object' ? { ...body, max_tokens: 1, stream: false } : body);
  const resolved = resolveModel(ctx.config.current, parseThinkingSuffix(canonical.model).model);
  if (resolved.provider.format !== 'anthropic') {
    throw new TollgateError(
      'TOLLGATE_ERR_NOT_SUPPORTED',
      `count_tokens is answered by Anthropic-format providers only; '${resolved.model}' is served by a '${resolved.provider.format}' provider`,
      { param: 'model' },
    );
  }
  const route = await ctx.router.connect(resolved);
  const built = anthropicCodec.buildRequest(canonical, { providerId: route.providerId, provider: route.provider, modelId: route.modelId, model: route.modelConfig });
  const { max_tokens: _maxTokens, stream: _stream, ...upstreamBody } = built.body;
  const gone = new ClientAbort();
  const onClose = () => gone.abort();
  reply.raw.once('close', onClose);
  try {
    const res = await ctx.dispatcher.send(
      route.connection?.id ?? route.providerId, route.provider,
      { path: `${built.path}/count_tokens`, headers: built.headers, body: upstreamBody },
      { stream: false, signal: gone },
    );
    const text = await res.text();
    const headers = res.status >= 200 && res.status < 300 ? { 'content-type': 'application/json' } : pickHeaders(res.headers, FORWARDED_ERROR_HEADERS);
    await reply.code(res.status).headers(headers).send(text);
  } catch (err) {
    if (gone.aborted) return reply.hijack();
    throw classifyTransportError(err);
  } finally {
    reply.raw.off('close', onClose);
  }
}
