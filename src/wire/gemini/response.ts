// A whole (non-streamed) GenerateContentResponse <-> CanonicalResponse. Only the first candidate is read
// (candidateCount > 1 has no canonical form).

import { TollgateError } from '../../core/errors.js';
import type { CanonicalResponse, StopReason } from '../canonical.js';
import { geminiUsage, renderGeminiUsage } from './usage.js';
import { answerParts, answerToGemini, finishReasonFor, isObj, stopReasonFrom, type Json } from './wire.js';

export function parseGeminiResponse(json: unknown): CanonicalResponse {
  if (!isObj(json)) throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'Gemini response is not a JSON object');
  const cand = Array.isArray(json.candidates) && isObj(json.candidates[0]) ? json.candidates[0] : null;
  const { parts } = answerParts(isObj(cand?.content) ? cand.content.parts : undefined);
  return {
    id: typeof json.responseId === 'string' ? json.responseId : '',
    model: typeof json.modelVersion === 'string' ? json.modelVersion : '',
    content: parts,
    stopReason: responseStopReason(json, cand, parts.some((p) => p.type === 'tool_call')),
    usage: geminiUsage(json.usageMetadata),
  };
}

/** A prompt blocked before any candidate (promptFeedback.blockReason) is content_filter; no finishReason is 'end'. */
function responseStopReason(json: Json, cand: Json | null, sawToolCall: boolean): StopReason {
  if (typeof cand?.finishReason === 'string') return stopReasonFrom(cand.finishReason, sawToolCall);
  if (isObj(json.promptFeedback) && typeof json.promptFeedback.blockReason === 'string') return 'content_filter';
  return sawToolCall ? 'tool_calls' : 'end';
}

/** The GenerateContentResponse a Gemini client expects; `model` (the name the client asked for) is modelVersion. */
export function renderGeminiResponse(res: CanonicalResponse, model: string): Json {
  const out: Json = {
    candidates: [{ content: { role: 'model', parts: answerToGemini(res.content) }, finishReason: finishReasonFor(res.stopReason), index: 0 }],
  };
  if (res.usage !== null) out.usageMetadata = renderGeminiUsage(res.usage);
  out.modelVersion = model;
  if (res.id !== '') out.responseId = res.id;
  return out;
}
