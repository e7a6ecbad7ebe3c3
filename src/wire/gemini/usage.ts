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

import { larger, tokenCount, type Usage } from '../../ledger/types.js';
import { isObj } from './wire.js';

const n = tokenCount;

/** usageMetadata's counts as reported (bounded: tokenCount), before any is derived from another. */
export interface GeminiCounts {
  readonly prompt: number | null;
  readonly cached: number | null;
  readonly candidates: number | null;
  readonly thoughts: number | null;
  readonly toolUse: number | null;
}

/** A usageMetadata's counts; null when it reports none of prompt, candidates, thoughts or tool-use prompt. */
export function geminiCounts(raw: unknown): GeminiCounts | null {
  if (!isObj(raw)) return null;
  const c = { prompt: n(raw.promptTokenCount), cached: n(raw.cachedContentTokenCount), candidates: n(raw.candidatesTokenCount), thoughts: n(raw.thoughtsTokenCount), toolUse: n(raw.toolUsePromptTokenCount) };
  return c.prompt === null && c.candidates === null && c.thoughts === null && c.toolUse === null ? null : c;
}

/**
 * A stream's counts so far after one more chunk's: each count the larger (a chunk's usageMetadata is the answer's so
 * far; one that falls is not believed). Taken over the counts as reported, not the buckets derived from them: the
 * input bucket (prompt minus cached) rightly falls when a later chunk first reports the cached count (the chunks
 * before the last may carry promptTokenCount alone), and the larger of the two buckets counted the cache twice.
 */
export function laterCounts(earlier: GeminiCounts | null, later: GeminiCounts): GeminiCounts {
  if (earlier === null) return later;
  return {
    prompt: larger(earlier.prompt, later.prompt), cached: larger(earlier.cached, later.cached), candidates: larger(earlier.candidates, later.candidates),
    thoughts: larger(earlier.thoughts, later.thoughts), toolUse: larger(earlier.toolUse, later.toolUse),
  };
}

/** The five buckets of a usageMetadata's counts (the rules at the top of this file). */
export function countsUsage(c: GeminiCounts): Usage {
  const input = c.prompt === null && c.toolUse === null ? null : Math.max(0, (c.prompt ?? 0) - (c.cached ?? 0)) + (c.toolUse ?? 0);
  return { input, cached: c.cached, cacheWrite: null, output: c.candidates, reasoning: c.thoughts };
}

export function geminiUsage(raw: unknown): Usage | null {
  const c = geminiCounts(raw);
  return c === null ? null : countsUsage(c);
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
