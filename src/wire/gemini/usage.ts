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
//
// Audio is billed at its own rate (Gemini 2.5 Flash: $1.00 per 1M input tokens against $0.30 for text, image and
// video). Its counts are by modality: promptTokensDetails (of promptTokenCount), cacheTokensDetails (of the cached
// count), candidatesTokensDetails (of candidatesTokenCount), each `[{modality, tokenCount}]`. The audio part of input
// is the prompt's AUDIO tokens less the cache's (cached audio stays in the cached bucket, at the cached price), of
// output the candidates' AUDIO tokens (Usage.audioInput, audioOutput).

import { MAX_CALL_SEARCHES, larger, searchCount, tokenCount, withAudio, type Usage } from '../../ledger/types.js';
import { isObj } from './wire.js';

const n = tokenCount;

/** usageMetadata's counts as reported (bounded: tokenCount), before any is derived from another. */
export interface GeminiCounts {
  readonly prompt: number | null;
  readonly cached: number | null;
  readonly candidates: number | null;
  readonly thoughts: number | null;
  readonly toolUse: number | null;
  /** The AUDIO tokens of promptTokenCount, of cachedContentTokenCount and of candidatesTokenCount (null: none said). */
  readonly promptAudio: number | null;
  readonly cachedAudio: number | null;
  readonly candidatesAudio: number | null;
}

/** A usageMetadata's counts; null when it reports none of prompt, candidates, thoughts or tool-use prompt. */
export function geminiCounts(raw: unknown): GeminiCounts | null {
  if (!isObj(raw)) return null;
  const c = {
    prompt: n(raw.promptTokenCount), cached: n(raw.cachedContentTokenCount), candidates: n(raw.candidatesTokenCount), thoughts: n(raw.thoughtsTokenCount), toolUse: n(raw.toolUsePromptTokenCount),
    promptAudio: audioOf(raw.promptTokensDetails), cachedAudio: audioOf(raw.cacheTokensDetails), candidatesAudio: audioOf(raw.candidatesTokensDetails),
  };
  return c.prompt === null && c.candidates === null && c.thoughts === null && c.toolUse === null ? null : c;
}

/** The AUDIO entry's tokenCount of a `[{modality, tokenCount}]` list; null when there is none (or no list). */
function audioOf(details: unknown): number | null {
  if (!Array.isArray(details)) return null;
  for (const d of details as unknown[]) if (isObj(d) && d.modality === 'AUDIO') return n(d.tokenCount);
  return null;
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
    promptAudio: larger(earlier.promptAudio, later.promptAudio), cachedAudio: larger(earlier.cachedAudio, later.cachedAudio),
    candidatesAudio: larger(earlier.candidatesAudio, later.candidatesAudio),
  };
}

/** The five buckets of a usageMetadata's counts (the rules at the top of this file). */
export function countsUsage(c: GeminiCounts): Usage {
  const input = c.prompt === null && c.toolUse === null ? null : Math.max(0, (c.prompt ?? 0) - (c.cached ?? 0)) + (c.toolUse ?? 0);
  const usage: Usage = { input, cached: c.cached, cacheWrite: null, output: c.candidates, reasoning: c.thoughts };
  if (c.promptAudio === null && c.candidatesAudio === null) return usage;
  // Of the prompt's audio, what the cache did not hold (never below 0; withAudio bounds it by the input).
  const audioIn = c.promptAudio === null ? null : Math.max(0, c.promptAudio - Math.min(c.cachedAudio ?? 0, c.cached ?? 0));
  return withAudio(usage, audioIn, c.candidatesAudio);
}

export function geminiUsage(raw: unknown): Usage | null {
  const c = geminiCounts(raw);
  return c === null ? null : countsUsage(c);
}

/**
 * The Google Search queries an answer ran for its grounding (`candidates[].groundingMetadata.webSearchQueries`, the
 * distinct queries over the candidates and, for a stream or a JSON array of chunks, over its chunks: one chunk may name
 * them all, or each a part), as the row's web searches: Google bills grounding per query (Gemini 3) or per grounded
 * prompt (Gemini 2.x), priced at `web_search_per_1k`, which has no default for Gemini (docs/recording.md).
 */
export class GroundingQueries {
  readonly #seen = new Set<string>();

  /** Adds the queries `json` (an answer or a chunk) names; whether it named any. */
  add(json: unknown): boolean {
    if (!isObj(json) || !Array.isArray(json.candidates)) return false;
    let named = false;
    for (const c of json.candidates as unknown[]) {
      const g = isObj(c) && isObj(c.groundingMetadata) ? c.groundingMetadata.webSearchQueries : undefined;
      if (!Array.isArray(g)) continue;
      for (const q of g as unknown[]) {
        if (typeof q !== 'string') continue;
        named = true;
        // Past the most a call is believed to run, the count is null whatever follows: no need to keep more.
        if (this.#seen.size <= MAX_CALL_SEARCHES) this.#seen.add(q);
      }
    }
    return named;
  }

  /** How many: null when none was named, or more than MAX_CALL_SEARCHES (not believed). */
  get count(): number | null {
    return this.#seen.size === 0 ? null : searchCount(this.#seen.size);
  }
}

/** The grounding queries one answer names (GroundingQueries). */
export function groundingSearches(json: unknown): number | null {
  const queries = new GroundingQueries();
  queries.add(json);
  return queries.count;
}

/** `usage` with the answer's grounding searches (the larger of those it holds and `searches`), when there are any. */
export function withGrounding(usage: Usage | null, searches: number | null): Usage | null {
  if (usage === null || searches === null) return usage;
  return { ...usage, webSearches: Math.max(usage.webSearches ?? 0, searches) };
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
