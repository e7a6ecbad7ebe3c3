// The `openai` wire format: OpenAI Chat Completions and every OpenAI-compatible vendor (a config row each).

import type { ProviderConfig } from '../../config/types.js';
import type { ChatAdapter, ChatBody, StreamChunkInfo, UpstreamRequest } from '../types.js';
import { apiKeyHeaders, endpointPath } from '../endpoint.js';
import { openaiUsage } from './usage.js';
import { own } from '../../core/own.js';
import { carryRawNumbers } from '../../core/raw-numbers.js';
import { AnswerText } from '../estimate.js';

const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The text a message or delta adds: its content, and its tool calls' names and arguments. */
function outputOf(m: Record<string, unknown>): string {
  let out = str(m.content) + str(m.refusal);
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls as ({ function?: { name?: unknown; arguments?: unknown } } | null)[]) out += str(c?.function?.name) + str(c?.function?.arguments);
  }
  return out;
}

/** DeepSeek-style reasoning (`reasoning_content`) or OpenRouter's (`reasoning`). */
const reasoningOf = (m: Record<string, unknown>): string => str(m.reasoning_content) + str(m.reasoning);

export const openaiAdapter: ChatAdapter = {
  chatRequest(p: ProviderConfig, modelId: string, body: ChatBody, askUsage: boolean): UpstreamRequest {
    const out: Record<string, unknown> = { ...body, model: modelId };
    // Numbers the client wrote past what JavaScript holds (a seed past 2^53) go on as written (core/raw-numbers.ts).
    carryRawNumbers(body, out);
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
    const j = json as { usage?: unknown; service_tier?: unknown } | null;
    return openaiUsage(j?.usage, j?.service_tier);
  },

  answerText(json: unknown): AnswerText {
    const answer = new AnswerText();
    const choices = (json as { choices?: unknown } | null)?.choices;
    for (const ch of Array.isArray(choices) ? (choices as ({ message?: Record<string, unknown> } | null)[]) : []) {
      const m = ch?.message;
      if (m === null || typeof m !== 'object') continue;
      answer.reasoning(reasoningOf(m));
      answer.output(outputOf(m));
    }
    return answer;
  },

  inspectChunk(json: unknown): StreamChunkInfo {
    const c = (json ?? {}) as { choices?: unknown; usage?: unknown };
    const choices = Array.isArray(c.choices) ? (c.choices as ({ delta?: Record<string, unknown> } | null)[]) : [];
    let deltas = 0;
    let output = '';
    let reasoning = '';
    for (const ch of choices) {
      const d = ch?.delta;
      if (d && (nonEmpty(d.content) || nonEmpty(d.reasoning_content) || nonEmpty(d.reasoning) || (Array.isArray(d.tool_calls) && d.tool_calls.length > 0))) {
        deltas++;
        output += outputOf(d);
        reasoning += reasoningOf(d);
      }
    }
    // The chunk's tier is the stream's to keep (a vendor may say it on some chunks only): the relay applies it.
    const usage = openaiUsage(c.usage);
    return { usage, deltas, output, reasoning, usageOnly: usage !== null && choices.length === 0 };
  },
};
