// The `openai` wire format: OpenAI Chat Completions and every OpenAI-compatible vendor (a config row each).

import type { ProviderConfig } from '../../config/types.js';
import type { ChatAdapter, ChatBody, StreamChunkInfo, UpstreamRequest } from '../types.js';
import { apiKeyHeaders, endpointPath } from '../endpoint.js';
import { openaiUsage } from './usage.js';
import { own } from '../../own.js';

const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v.length > 0;

export const openaiAdapter: ChatAdapter = {
  chatRequest(p: ProviderConfig, modelId: string, body: ChatBody, askUsage: boolean): UpstreamRequest {
    const out: Record<string, unknown> = { ...body, model: modelId };
    // max_tokens / max_completion_tokens clamped to the model's configured ceiling.
    const ceiling = own(p.models, modelId)?.max_output_tokens;
    if (ceiling !== undefined) {
      for (const k of ['max_tokens', 'max_completion_tokens'] as const) {
        const v = body[k];
        if (typeof v === 'number' && v > ceiling) out[k] = ceiling;
      }
    }
    if (body.stream === true && askUsage) {
      const so = (body.stream_options ?? {}) as Record<string, unknown>;
      out.stream_options = { ...so, include_usage: true };
    }
    return {
      // The in-process mock has no URL; it answers on OpenAI's path.
      path: endpointPath(p, '/chat/completions', '/v1'),
      headers: { ...p.headers, 'content-type': 'application/json', accept: body.stream === true ? 'text/event-stream' : 'application/json', ...apiKeyHeaders(p) },
      body: out,
    };
  },

  usageFromResponse(json: unknown): ReturnType<ChatAdapter['usageFromResponse']> {
    return openaiUsage((json as { usage?: unknown } | null)?.usage);
  },

  inspectChunk(json: unknown): StreamChunkInfo {
    const c = (json ?? {}) as { choices?: unknown; usage?: unknown };
    const choices = Array.isArray(c.choices) ? (c.choices as ({ delta?: Record<string, unknown> } | null)[]) : [];
    let deltas = 0;
    for (const ch of choices) {
      const d = ch?.delta;
      if (d && (nonEmpty(d.content) || nonEmpty(d.reasoning_content) || nonEmpty(d.reasoning) || (Array.isArray(d.tool_calls) && d.tool_calls.length > 0))) deltas++;
    }
    const usage = openaiUsage(c.usage);
    return { usage, deltas, usageOnly: usage !== null && choices.length === 0 };
  },
};
