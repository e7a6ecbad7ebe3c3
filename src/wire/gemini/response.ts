// A whole (non-streamed) GenerateContentResponse <-> CanonicalResponse. The first candidate is the answer; later
// ones (candidateCount > 1) are `moreChoices`. A candidate's logprobsResult (chosenCandidates with the
// topCandidates at each position) is the canonical token logprobs, and rendered back the same way.

import { TollgateError } from '../../core/errors.js';
import type { CanonicalChoice, CanonicalResponse, StopReason, TokenLogprob } from '../canonical.js';
import { geminiUsage, groundingSearches, renderGeminiUsage, withGrounding } from './usage.js';
import { answerParts, answerToGemini, finishReasonFor, isObj, stopReasonFrom, type Json } from './wire.js';

export function parseGeminiResponse(json: unknown): CanonicalResponse {
  if (!isObj(json)) throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'Gemini response is not a JSON object');
  const cands = Array.isArray(json.candidates) ? json.candidates.filter(isObj) : [];
  // Candidates in `index` order (proto3 JSON omits index 0).
  const ordered = [...cands].sort((a, b) => (typeof a.index === 'number' ? a.index : 0) - (typeof b.index === 'number' ? b.index : 0));
  const [first, ...rest] = (ordered.length > 0 ? ordered : [null]).map((c) => parseCandidate(json, c));
  return {
    id: typeof json.responseId === 'string' ? json.responseId : '',
    model: typeof json.modelVersion === 'string' ? json.modelVersion : '',
    ...first!,
    usage: withGrounding(geminiUsage(json.usageMetadata), groundingSearches(json)),
    ...(rest.length > 0 ? { moreChoices: rest } : {}),
  };
}

/** One candidate (null: none, a blocked prompt) -> a canonical answer. */
function parseCandidate(json: Json, cand: Json | null): CanonicalChoice {
  const { parts } = answerParts(isObj(cand?.content) ? cand.content.parts : undefined, json.responseId);
  const logprobs = parseLogprobsResult(cand?.logprobsResult);
  return {
    content: parts,
    stopReason: responseStopReason(json, cand, parts.some((p) => p.type === 'tool_call')),
    ...(logprobs === undefined ? {} : { logprobs }),
  };
}

/** logprobsResult -> canonical token logprobs: chosenCandidates[i] with topCandidates[i].candidates as its alternatives. */
export function parseLogprobsResult(raw: unknown): TokenLogprob[] | undefined {
  if (!isObj(raw) || !Array.isArray(raw.chosenCandidates)) return undefined;
  const top = Array.isArray(raw.topCandidates) ? raw.topCandidates : [];
  const entry = (c: unknown): { token: string; logprob: number } | null =>
    isObj(c) && typeof c.token === 'string' ? { token: c.token, logprob: typeof c.logProbability === 'number' ? c.logProbability : 0 } : null;
  const out = raw.chosenCandidates.flatMap((c, i): TokenLogprob[] => {
    const chosen = entry(c);
    if (chosen === null) return [];
    const at = top[i];
    const alternatives = isObj(at) && Array.isArray(at.candidates) ? at.candidates.map(entry).filter((e): e is { token: string; logprob: number } => e !== null) : [];
    return [{ ...chosen, top: alternatives }];
  });
  return out.length > 0 ? out : undefined;
}

/** Canonical token logprobs -> a candidate's logprobsResult. */
export function renderLogprobsResult(lps: readonly TokenLogprob[]): Json {
  const entry = (t: { token: string; logprob: number }): Json => ({ token: t.token, logProbability: t.logprob });
  return {
    topCandidates: lps.map((t) => ({ candidates: t.top.map(entry) })),
    chosenCandidates: lps.map(entry),
    logProbabilitySum: lps.reduce((sum, t) => sum + t.logprob, 0),
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
  const candidate = (c: CanonicalChoice, index: number): Json => ({
    content: { role: 'model', parts: answerToGemini(c.content) },
    finishReason: finishReasonFor(c.stopReason),
    index,
    ...(c.logprobs !== undefined && c.logprobs.length > 0 ? { logprobsResult: renderLogprobsResult(c.logprobs) } : {}),
  });
  const out: Json = { candidates: [res, ...(res.moreChoices ?? [])].map(candidate) };
  if (res.usage !== null) out.usageMetadata = renderGeminiUsage(res.usage);
  out.modelVersion = model;
  if (res.id !== '') out.responseId = res.id;
  return out;
}
