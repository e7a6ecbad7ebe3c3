// Anthropic Messages answers (non-streamed): upstream Message JSON -> CanonicalResponse, and back for a client.

import type { CanonicalResponse, Part, StopReason } from '../canonical.js';
import { parseAnswerBlock, renderAnswerBlock } from './content.js';
import { isObj, protocol, str, type Json } from './json.js';
import { anthropicUsage, renderUsage } from './usage.js';

/**
 * Anthropic stop_reason -> canonical. pause_turn (a long server-tool turn the client should continue) has no
 * canonical counterpart and reads as 'end'; model_context_window_exceeded reads as 'max_tokens'. Unknown or
 * missing -> 'end'.
 */
export function parseStopReason(r: unknown): StopReason {
  switch (r) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'refusal';
    default:
      return 'end';
  }
}

/** Canonical -> Anthropic stop_reason. content_filter reads as refusal; error (no Anthropic value) as end_turn. */
export function renderStopReason(r: StopReason): string {
  switch (r) {
    case 'max_tokens':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
    case 'refusal':
      return 'refusal';
    case 'end':
    case 'error':
      return 'end_turn';
  }
}

/** An id a client will take for an Anthropic message id: the canonical one when it already is one, else prefixed. */
export const messageId = (id: string): string => (id.startsWith('msg_') ? id : `msg_${id}`);

export function parseResponse(json: unknown): CanonicalResponse {
  if (!isObj(json)) protocol('Anthropic answer is not a JSON object');
  if (json.type === 'error') {
    const e = isObj(json.error) ? json.error : {};
    protocol(`Anthropic answered with an error: ${str(e.type) ?? 'error'}: ${str(e.message) ?? ''}`);
  }
  if (!Array.isArray(json.content)) protocol('Anthropic answer has no content array');
  const content = json.content.map(parseAnswerBlock).filter((p): p is Part => p !== null);
  const stopSequence = str(json.stop_sequence);
  return {
    id: str(json.id) ?? '',
    model: str(json.model) ?? '',
    content,
    stopReason: parseStopReason(json.stop_reason),
    ...(stopSequence === undefined ? {} : { stopSequence }),
    usage: anthropicUsage(json.usage),
  };
}

export function renderResponse(res: CanonicalResponse, model: string): Json {
  return {
    id: messageId(res.id),
    type: 'message',
    role: 'assistant',
    model,
    content: res.content.map(renderAnswerBlock).filter((b): b is Json => b !== null),
    stop_reason: renderStopReason(res.stopReason),
    stop_sequence: res.stopSequence ?? null,
    usage: renderUsage(res.usage),
  };
}
