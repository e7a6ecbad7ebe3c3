// Data-plane routes. Handlers unpack and delegate: OpenAI Chat to an OpenAI-format provider takes the byte-for-byte
// fast path (chat.ts); everything else goes through the canonical model (translated.ts).

import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Config } from '../config/types.js';
import { TollgateError } from '../errors.js';
import { anthropicCodec } from '../providers/anthropic/index.js';
import { geminiCodec } from '../providers/gemini/index.js';
import { chatIncludeUsage, createOpenAIChatRenderer, openaiCodec } from '../providers/openai/codec.js';
import { responsesCodec } from '../providers/openai-responses/index.js';
import { codecFor } from '../providers/registry.js';
import { own } from '../own.js';
import { autoSwitch, type BudgetGate } from '../routing/auto-switch.js';
import { comboOf } from '../routing/combos.js';
import { listModels } from '../routing/resolve.js';
import { CHAT_ROUTE, ENDPOINT as CHAT_ENDPOINT, handleChat } from './chat.js';
import type { GatewayContext } from './context.js';
import { COUNT_TOKENS_ROUTE, handleCountTokens } from './count-tokens.js';
import { handleTranslated, type InboundSpec } from './translated.js';

export const MESSAGES_ROUTE = '/v1/messages';
export const RESPONSES_ROUTE = '/v1/responses';
export const GEMINI_ROUTE = '/v1beta/models/*';

/** Usage-row endpoint names of the data-plane routes (also for requests refused before their handler). */
export const DATA_PLANE_ENDPOINTS: Readonly<Record<string, string>> = {
  [CHAT_ROUTE]: CHAT_ENDPOINT,
  [MESSAGES_ROUTE]: 'messages',
  [RESPONSES_ROUTE]: 'responses',
  [GEMINI_ROUTE]: 'generate_content',
};

const CHAT: InboundSpec = {
  endpoint: CHAT_ENDPOINT,
  codec: openaiCodec,
  renderer: (req, model, requestId) =>
    createOpenAIChatRenderer(model, { includeUsage: chatIncludeUsage(req.body), created: Math.floor(Date.now() / 1000), requestId }),
};
const MESSAGES: InboundSpec = { endpoint: 'messages', codec: anthropicCodec };
const RESPONSES: InboundSpec = { endpoint: 'responses', codec: responsesCodec };

/**
 * `{model}:generateContent` or `{model}:streamGenerateContent` (the model may contain '/', sent as is or as %2F).
 * The router has already percent-decoded the wildcard once (and answered a malformed escape with a 400): decoding it
 * again would turn `%25` into a lone '%' and throw a URIError.
 */
function geminiTarget(req: FastifyRequest): { model: string; stream: boolean } {
  const rest = (req.params as { '*'?: string })['*'] ?? '';
  const colon = rest.lastIndexOf(':');
  const action = colon === -1 ? '' : rest.slice(colon + 1);
  if (action !== 'generateContent' && action !== 'streamGenerateContent') {
    throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no route for POST /v1beta/models/${rest.slice(0, 200)}: expected {model}:generateContent or {model}:streamGenerateContent`);
  }
  return { model: rest.slice(0, colon), stream: action === 'streamGenerateContent' };
}
const GEMINI: InboundSpec = {
  endpoint: 'generate_content',
  codec: geminiCodec,
  fromUrl: geminiTarget,
};

/**
 * OpenAI Chat goes through the canonical model when its target is not an OpenAI-format provider, when it names a
 * thinking level (`model(level)`, which must become the target's own parameters), or when it uses something the
 * model's configured capabilities exclude (which must be removed). Otherwise it takes the byte-for-byte fast path.
 */
function chatNeedsTranslation(cfg: Config, body: unknown, budget: BudgetGate): boolean {
  const b = body as { model?: unknown } | null;
  const model = b?.model;
  if (typeof model !== 'string') return false; // the fast path answers malformed bodies
  if (model.endsWith(')')) return true;
  // A combo runs its attempts through the canonical model; so does a target the budget auto-switch rewrites.
  if (comboOf(cfg, model) !== undefined || autoSwitch(cfg, model, budget).switched) return true;
  const slash = model.indexOf('/');
  const provider = own(cfg.providers, model.slice(0, Math.max(0, slash)));
  if (provider === undefined) return false;
  if (provider.format !== 'openai' && provider.format !== 'mock') return true;
  const caps = own(provider.models, model.slice(slash + 1))?.capabilities;
  return caps !== undefined && caps.length > 0 && usesExcluded(b as Record<string, unknown>, caps);
}

/** Does an OpenAI Chat body use a feature outside `caps`? (tools, images, files, audio, a json_schema format) */
function usesExcluded(body: Record<string, unknown>, caps: readonly string[]): boolean {
  if (!caps.includes('tools') && (body.tools !== undefined || body.tool_choice !== undefined)) return true;
  if (!caps.includes('structured_output') && (body.response_format as { type?: unknown } | undefined)?.type === 'json_schema') return true;
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

export const proxyRoutes: FastifyPluginAsync<{ ctx: GatewayContext }> = async (app, { ctx }) => {
  app.post(CHAT_ROUTE, (req, reply) =>
    chatNeedsTranslation(ctx.config.current, req.body, ctx.router.budget) ? handleTranslated(ctx, codecFor, CHAT, req, reply) : handleChat(ctx, req, reply),
  );
  app.post(MESSAGES_ROUTE, (req, reply) => handleTranslated(ctx, codecFor, MESSAGES, req, reply));
  app.post(COUNT_TOKENS_ROUTE, (req, reply) => handleCountTokens(ctx, req, reply));
  app.post(RESPONSES_ROUTE, (req, reply) => handleTranslated(ctx, codecFor, RESPONSES, req, reply));
  app.post(GEMINI_ROUTE, (req, reply) => handleTranslated(ctx, codecFor, GEMINI, req, reply));

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
