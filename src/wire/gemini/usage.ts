// Gemini usageMetadata <-> the five buckets (DESIGN.md decision 4).
//
// Gemini counts cached tokens INSIDE promptTokenCount (cachedContentTokenCount is a part of it), so cached is taken
// out of input. Thinking tokens are OUTSIDE candidatesTokenCount (totalTokenCount = prompt + toolUsePrompt +
// candidates + thoughts), so output is candidatesTokenCount as is and reasoning is thoughtsTokenCount.
// toolUsePromptTokenCount (the prompt of a built-in tool such as Google Search or code execution) is also outside
// promptTokenCount and billed as input, so it is added to input: the buckets then add up to totalTokenCount.
//
// Gemini's JSON omits zero-valued fields (proto3), so an absent count may mean 0; it is still null here: the
// provider did not report it.

import { tokenCount, type Usage } from '../../ledger/types.js';
import { isObj } from './wire.js';

const n = tokenCount;

export function geminiUsage(raw: unknown): Usage | null {
  if (!isObj(raw)) return null;
  const prompt = n(raw.promptTokenCount);
  const candidates = n(raw.candidatesTokenCount);
  const thoughts = n(raw.thoughtsTokenCount);
  const toolUse = n(raw.toolUsePromptTokenCount);
  if (prompt === null && candidates === null && thoughts === null && toolUse === null) return null;
  const cached = n(raw.cachedContentTokenCount);
  const input = prompt === null && toolUse === null ? null : Math.max(0, (prompt ?? 0) - (cached ?? 0)) + (toolUse ?? 0);
  return { input, cached, cacheWrite: null, output: candidates, reasoning: thoughts };
}

/**
 * The buckets -> usageMetadata. promptTokenCount is every prompt token (input + cached + cacheWrite: Gemini has no
 * cache-write count, and a tool-use prompt count cannot be told apart from input any more); a null bucket is left
 * out rather than sent as 0. totalTokenCount is the sum.
 */
export function renderGeminiUsage(u: Usage): Record<string, number> {
  const out: Record<string, number> = {};
  if (u.input !== null || u.cached !== null || u.cacheWrite !== null) out.promptTokenCount = (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0);
  if (u.output !== null) out.candidatesTokenCount = u.output;
  out.totalTokenCount = (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0) + (u.output ?? 0) + (u.reasoning ?? 0);
  if (u.cached !== null) out.cachedContentTokenCount = u.cached;
  if (u.reasoning !== null) out.thoughtsTokenCount = u.reasoning;
  return out;
}
