// Responses API usage <-> the five buckets (DESIGN.md decision 4). Like Chat Completions, the Responses API counts
// cached tokens inside input_tokens and reasoning tokens inside output_tokens; both are taken out so no token is
// counted twice. A missing details object leaves its bucket null (not reported), never 0. Cache writes are not
// reported by this API: cacheWrite is always null. The built-in web_search tool is billed per call, not per token:
// the answer's `web_search_call` output items are counted as webSearches (the usage object has no count of them).

import { atTier, searchCount, tokenCount, type Usage } from '../../ledger/types.js';
import { isObj } from './shared.js';

const n = tokenCount;

/**
 * The usage of a response; `items`, the response's output items, gives its web searches (webSearches), `tier` its
 * `service_tier` (flex and priority are priced apart).
 */
export function responsesUsage(raw: unknown, items?: unknown, tier?: unknown): Usage | null {
  if (!isObj(raw)) return null;
  const input = n(raw.input_tokens);
  const output = n(raw.output_tokens);
  if (input === null && output === null) return null;
  const cached = isObj(raw.input_tokens_details) ? n(raw.input_tokens_details.cached_tokens) : null;
  const reasoning = isObj(raw.output_tokens_details) ? n(raw.output_tokens_details.reasoning_tokens) : null;
  const usage: Usage = {
    input: input === null ? null : Math.max(0, input - (cached ?? 0)),
    cached,
    cacheWrite: null,
    output: output === null ? null : Math.max(0, output - (reasoning ?? 0)),
    reasoning,
  };
  const searches = webSearchCalls(items);
  return atTier(searches === null ? usage : { ...usage, webSearches: searches }, tier);
}

/** How many `web_search_call` items an output holds; null when none (or past what is believed: searchCount). */
function webSearchCalls(items: unknown): number | null {
  if (!Array.isArray(items)) return null;
  let count = 0;
  for (const item of items) if (isObj(item) && item.type === 'web_search_call') count++;
  return count === 0 ? null : searchCount(count);
}

export interface WireUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/**
 * The buckets added back up into the wire shape. The wire has no "not reported": a null bucket is written as 0.
 * Cache writes are input the model read, so they count in input_tokens.
 */
export function renderUsage(u: Usage): WireUsage {
  const input = (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0);
  const output = (u.output ?? 0) + (u.reasoning ?? 0);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: input + output,
  };
}
