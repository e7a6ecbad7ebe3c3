// Data-plane routes. Handlers unpack and delegate: OpenAI Chat to an OpenAI-format provider takes the byte-for-byte
// fast path (chat.ts); Anthropic, Responses and Gemini to a provider of their own format take the same-format
// passthrough (passthrough.ts); everything else goes through the canonical model (translated.ts).

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/types.js';
import { anthropicCodec } from '../wire/anthropic/index.js';
import { geminiCodec } from '../wire/gemini/index.js';
import { chatIncludeUsage, createOpenAIChatRenderer, openaiCodec } from '../wire/openai/codec.js';
import { responsesCodec } from '../wire/openai-responses/index.js';
import type { CodecFormat } from '../wire/codec.js';
import { anthropicSameFormat } from '../wire/anthropic/same-format.js';
import { geminiSameFormat } from '../wire/gemini/same-format.js';
import { responsesSameFormat } from '../wire/openai-responses/same-format.js';
import { codecFor } from '../wire/registry.js';
import { TollgateError, errorBody } from '../core/errors.js';
import { own } from '../core/own.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import type { Target } from '../routing/auto-switch.js';
import { comboOf } from '../routing/combos.js';
import { listModels } from '../routing/resolve.js';
import { CHAT_ROUTE, ENDPOINT as CHAT_ENDPOINT, handleChat } from './chat.js';
import type { GatewayContext } from './context.js';
import { COUNT_TOKENS_ROUTE, handleCountTokens, handleGeminiCountTokens } from './count-tokens.js';
import { bodyModel, bodyTarget, handlePassthrough, type PassthroughInbound } from './passthrough.js';
import { handleTranslated } from './translated.js';
import { logRefusal } from './request.js';
import { waitForFigures, type HeldRequest } from './held.js';
import type { InboundSpec } from './forward.js';
import { splitModelSpec } from '../config/model-spec.js';

export const MESSAGES_ROUTE = '/v1/messages';
export const RESPONSES_ROUTE = '/v1/responses';
/**
 * Gemini, as the SDKs send it: `/v1beta/models/<p>/<m>:<action>`, `/v1beta/<p>/<m>:<action>` (@ai-sdk/google and
 * opencode take a model id with '/' as a resource path and add no `models/`), and the same under `/v1` (the v1
 * surface). Wildcards: find-my-way tries static routes first, so /v1/chat/completions, /v1/messages,
 * /v1/messages/count_tokens and /v1/responses keep their handlers; GET /v1/models is another method.
 */
export const GEMINI_ROUTE = '/v1beta/*';
export const GEMINI_V1_ROUTE = '/v1/*';

/** Usage-row endpoint names of the data-plane routes (also for requests refused before their handler). */
const DATA_PLANE_ENDPOINTS: Readonly<Record<string, string>> = {
  [CHAT_ROUTE]: CHAT_ENDPOINT,
  [MESSAGES_ROUTE]: 'messages',
  [RESPONSES_ROUTE]: 'responses',
  [GEMINI_ROUTE]: 'generate_content',
  [GEMINI_V1_ROUTE]: 'generate_content',
};

/**
 * The usage-row endpoint of a request refused before its handler (its body, its size), or undefined when it is no
 * model call and leaves no row: a path the Gemini wildcards take that names no generateContent call (countTokens, as
 * /v1/messages/count_tokens; a path without an action, which the handler answers 404 like any path without a route).
 */
/**
 * The 404 of a POST under `/v1/` or `/v1beta/` that is no Gemini call (`/v1/embeddings`, `/v1/audio/...`: no route,
 * docs/api.md), else null. Its body is refused by its content-type parser before its handler runs (a multipart upload
 * was a 415, a bad JSON body a 400): the error handler answers this instead, as the handler does.
 */
export function noRoute(req: FastifyRequest): TollgateError | null {
  const route = req.routeOptions.url;
  if ((route !== GEMINI_ROUTE && route !== GEMINI_V1_ROUTE) || geminiPath(wildcard(req)) !== null) return null;
  return new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no route for POST ${route === GEMINI_ROUTE ? '/v1beta' : '/v1'}/${wildcard(req).slice(0, 200)}`);
}

export function dataPlaneEndpoint(req: FastifyRequest): string | undefined {
  const route = req.routeOptions.url;
  const endpoint = route === undefined ? undefined : DATA_PLANE_ENDPOINTS[route];
  if (route !== GEMINI_ROUTE && route !== GEMINI_V1_ROUTE) return endpoint;
  const p = geminiPath(wildcard(req));
  return p === null || p.action === 'countTokens' ? undefined : endpoint;
}

const CHAT: InboundSpec = {
  endpoint: CHAT_ENDPOINT,
  codec: openaiCodec,
  renderer: (req, model, requestId) =>
    createOpenAIChatRenderer(model, { includeUsage: chatIncludeUsage(req.body), created: Math.floor(Date.now() / 1000), requestId }),
};
const MESSAGES: InboundSpec = { endpoint: 'messages', codec: anthropicCodec };
const RESPONSES: InboundSpec = { endpoint: 'responses', codec: responsesCodec };

const GEMINI_ACTIONS = new Set(['generateContent', 'streamGenerateContent', 'countTokens']);

/**
 * `[models/]{model}:{action}` after the version (the model may contain '/', sent as is or as %2F). Null when the
 * path names no Gemini action. The router has already percent-decoded the wildcard once (and answered a malformed
 * escape with a 400): decoding it again would turn `%25` into a lone '%' and throw a URIError.
 */
export function geminiPath(rest: string): { model: string; action: string } | null {
  const colon = rest.lastIndexOf(':');
  const action = colon === -1 ? '' : rest.slice(colon + 1);
  if (!GEMINI_ACTIONS.has(action)) return null;
  const model = rest.slice(0, colon).replace(/^models\//, '');
  return model === '' ? null : { model, action };
}

const wildcard = (req: FastifyRequest): string => (req.params as { '*'?: string })['*'] ?? '';

function geminiTarget(req: FastifyRequest): { model: string; stream: boolean } {
  const p = geminiPath(wildcard(req));
  if (p === null) throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', 'expected {model}:generateContent or {model}:streamGenerateContent');
  return { model: p.model, stream: p.action === 'streamGenerateContent' };
}
const GEMINI: InboundSpec = {
  endpoint: 'generate_content',
  codec: geminiCodec,
  fromUrl: geminiTarget,
};

const MESSAGES_PASS: PassthroughInbound = { endpoint: 'messages', format: anthropicSameFormat, target: bodyTarget };
const RESPONSES_PASS: PassthroughInbound = { endpoint: 'responses', format: responsesSameFormat, target: bodyTarget };
const GEMINI_PASS: PassthroughInbound = {
  endpoint: 'generate_content',
  format: geminiSameFormat,
  target(req) {
    const p = geminiPath(wildcard(req))!;
    const alt = (req.query as { alt?: unknown } | undefined)?.alt;
    return { model: p.model, call: { stream: p.action === 'streamGenerateContent', action: p.action, alt: typeof alt === 'string' ? alt : '' } };
  },
};

/**
 * Same-format passthrough applies when the target (after the budget auto-switch, suffix removed) is a model of a
 * provider speaking the client's format, and not a combo (combos, fusion included, keep the canonical path). A name
 * that resolves to nothing goes the translated way, which answers it.
 */
function passesThrough(cfg: Config, format: CodecFormat, target: Target | undefined): boolean {
  if (target === undefined) return false;
  const model = parseThinkingSuffix(target.model).model;
  if (comboOf(cfg, model) !== undefined) return false;
  const spec = splitModelSpec(model);
  return spec !== null && own(cfg.providers, spec.provider)?.format === format;
}

/**
 * OpenAI Chat goes through the canonical model when its target is not an OpenAI-format provider, when it names a
 * thinking level (`model(level)`, which must become the target's own parameters), or when it uses something the
 * model's configured capabilities exclude (which must be removed). Otherwise it takes the byte-for-byte fast path.
 */
function chatNeedsTranslation(cfg: Config, body: unknown, target: Target | undefined): boolean {
  const b = body as { model?: unknown } | null;
  const model = b?.model;
  if (typeof model !== 'string' || target === undefined) return false; // the fast path answers malformed bodies
  if (model.endsWith(')')) return true;
  // A combo runs its attempts through the canonical model; so does a target the budget auto-switch rewrites.
  if (comboOf(cfg, model) !== undefined || target.switched) return true;
  const spec = splitModelSpec(model);
  const provider = spec === null ? undefined : own(cfg.providers, spec.provider);
  if (spec === null || provider === undefined) return false;
  if (provider.format !== 'openai' && provider.format !== 'mock') return true;
  const caps = own(provider.models, spec.modelId)?.capabilities;
  return caps !== undefined && caps.length > 0 && usesExcluded(b as Record<string, unknown>, caps);
}

/** Does an OpenAI Chat body use a feature outside `caps`? (tools, images, files, audio, a json_schema format, a reasoning effort) */
function usesExcluded(body: Record<string, unknown>, caps: readonly string[]): boolean {
  if (!caps.includes('tools') && (body.tools !== undefined || body.tool_choice !== undefined)) return true;
  if (!caps.includes('structured_output') && (body.response_format as { type?: unknown } | undefined)?.type === 'json_schema') return true;
  if (!caps.includes('reasoning') && body.reasoning_effort !== undefined) return true;
  const need: Readonly<Record<string, string>> = { image_url: 'vision', file: 'pdf', input_audio: 'audio' };
  if (caps.includes('vision') && caps.includes('pdf') && caps.includes('audio')) return false;
  for (const m of Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : []) {
    if (!Array.isArray(m?.content)) continue;
    for (const part of m.content as { type?: unknown }[]) {
      const cap = typeof part?.type === 'string' ? own(need, part.type) : undefined;
      if (cap !== undefined && !caps.includes(cap)) return true;
    }
  }
  return false;
}

/** Answer with one of the gateway's errors, without the usage row the error handler gives data-plane routes. */
async function refuse(reply: FastifyReply, e: TollgateError): Promise<void> {
  if (!reply.sent && !reply.raw.headersSent) await reply.code(e.status).send(errorBody(e, null));
}

export const proxyRoutes: FastifyPluginAsync<{ ctx: GatewayContext }> = async (app, { ctx }) => {
  const cfg = () => ctx.config.current;
  // The budget gate is asked once per request, here; the handler gets the answer (undefined: the request names no
  // model, and its handler answers that). After a start, a request whose answer reads figures not known yet waits.
  const targetOf = (asked: string | undefined): Target | undefined => (asked === undefined ? undefined : ctx.router.target(asked));
  /**
   * Hand the request its target: at once, or, when its routing reads a figure the start has not produced yet, once the
   * start's hold lets it go (held.ts); a client that left meanwhile is recorded there and not routed.
   */
  const routed = (held: Omit<HeldRequest, 'asked'> & { readonly asked: string | undefined }, go: (target: Target | undefined) => Promise<void>): Promise<void> => {
    const { asked } = held;
    if (asked === undefined || !ctx.router.mustWait(asked)) return go(targetOf(asked));
    return waitForFigures(ctx, { ...held, asked }).then((stays) => (stays ? go(targetOf(asked)) : undefined));
  };
  const onBody = (req: FastifyRequest, reply: FastifyReply, endpoint: string) => ({ req, reply, endpoint, asked: bodyModel(req.body) });
  app.post(CHAT_ROUTE, (req, reply) =>
    routed(onBody(req, reply, CHAT_ENDPOINT), (target) =>
      chatNeedsTranslation(cfg(), req.body, target) ? handleTranslated(ctx, { codecs: codecFor, inbound: CHAT, target }, req, reply) : handleChat(ctx, req, reply)));
  app.post(MESSAGES_ROUTE, (req, reply) =>
    routed(onBody(req, reply, MESSAGES.endpoint), (target) =>
      passesThrough(cfg(), 'anthropic', target)
        ? handlePassthrough(ctx, { inbound: MESSAGES_PASS, target: target! }, req, reply)
        : handleTranslated(ctx, { codecs: codecFor, inbound: MESSAGES, target }, req, reply)));
  app.post(COUNT_TOKENS_ROUTE, (req, reply) => handleCountTokens(ctx, req, reply));
  app.post(RESPONSES_ROUTE, (req, reply) =>
    routed(onBody(req, reply, RESPONSES.endpoint), (target) =>
      passesThrough(cfg(), 'openai-responses', target)
        ? handlePassthrough(ctx, { inbound: RESPONSES_PASS, target: target! }, req, reply)
        : handleTranslated(ctx, { codecs: codecFor, inbound: RESPONSES, target }, req, reply)));
  const gemini = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const p = geminiPath(wildcard(req));
    // Not a Gemini call: the same answer as any path without a route, and no usage row.
    if (p === null) return refuse(reply, noRoute(req)!);
    // Counting consumes no tokens: no usage row, refused or not (as /v1/messages/count_tokens), logged as any refusal.
    if (p.action === 'countTokens') {
      return handleGeminiCountTokens(ctx, p.model, req, reply).catch((err: unknown) => refuse(reply, logRefusal(req, err)));
    }
    return routed({ req, reply, endpoint: GEMINI.endpoint, asked: p.model, stream: p.action === 'streamGenerateContent' }, (target) =>
      passesThrough(cfg(), 'gemini', target)
        ? handlePassthrough(ctx, { inbound: GEMINI_PASS, target: target! }, req, reply)
        : handleTranslated(ctx, { codecs: codecFor, inbound: GEMINI, target }, req, reply));
  };
  app.post(GEMINI_ROUTE, gemini);
  app.post(GEMINI_V1_ROUTE, gemini);

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [
      ...listModels(ctx.config.current).map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.provider, kind: m.config.kind })),
      // Combos are addressed by their bare name, like a model.
      ...Object.entries(ctx.config.current.combos).map(([name, c]) => ({
        id: name, object: 'model', created: 0, owned_by: 'tollgate', kind: 'combo', strategy: c.strategy, models: c.models,
      })),
    ],
  }));
};
