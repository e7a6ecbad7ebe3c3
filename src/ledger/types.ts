// The five non-overlapping usage buckets of DESIGN.md decision 4. null = the provider did not report it;
// 0 = it reported zero. Totals are derived, never stored by a provider adapter.

export interface Usage {
  /** Input tokens that were not read from a cache. */
  readonly input: number | null;
  /** Input tokens read from a cache. */
  readonly cached: number | null;
  /** Input tokens written to a cache. */
  readonly cacheWrite: number | null;
  /** Output tokens that are not reasoning. */
  readonly output: number | null;
  /** Reasoning (thinking) tokens. */
  readonly reasoning: number | null;
}

export const NO_USAGE: Usage = Object.freeze({ input: null, cached: null, cacheWrite: null, output: null, reasoning: null });

/** Where the numbers came from: the upstream's own report, the gateway's estimate of a missing side (usage/estimate.ts), or nowhere. */
export type UsageSource = 'reported' | 'estimated' | 'none';

export const BUCKETS = ['input', 'cached', 'cacheWrite', 'output', 'reasoning'] as const;
export type Bucket = (typeof BUCKETS)[number];

export function totalTokens(u: Usage): number {
  return (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0) + (u.output ?? 0) + (u.reasoning ?? 0);
}

/** Input as the GenAI conventions count it (everything read), and output (everything generated). */
export function inputSide(u: Usage): number {
  return (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0);
}
export function outputSide(u: Usage): number {
  return (u.output ?? 0) + (u.reasoning ?? 0);
}

/** Whether any input-side (or output-side) bucket was reported or estimated; otherwise the side is unknown. */
export function knowsInput(u: Usage): boolean {
  return u.input !== null || u.cached !== null || u.cacheWrite !== null;
}
export function knowsOutput(u: Usage): boolean {
  return u.output !== null || u.reasoning !== null;
}

/** The usage of several upstream calls together (a combo request's): a bucket is null only if null in every one. */
export function addUsage(a: Usage, b: Usage): Usage {
  const add = (x: number | null, y: number | null) => (x === null ? y : y === null ? x : x + y);
  return {
    input: add(a.input, b.input),
    cached: add(a.cached, b.cached),
    cacheWrite: add(a.cacheWrite, b.cacheWrite),
    output: add(a.output, b.output),
    reasoning: add(a.reasoning, b.reasoning),
  };
}

/**
 * The most tokens one bucket of one call can hold: twice the longest context any model has (10M). A provider that
 * reports more (a bug, a hostile or broken upstream: 1.2e11, 1e300) is not believed: the bucket is taken as not
 * reported, and estimated like any missing one. Believed, such a figure put a cost the `cost` column cannot hold into
 * the row (refused by the store while the metrics and the span kept it), or, past what ClickHouse parses, blocked the
 * embedded writer for every row after it. With the config's prices at most MAX_PRICE_PER_MTOK (src/config/schema.ts),
 * a call's five buckets full cost at most 5 x 20M x $9,999 / 1M = $999,900: within the column's $999,999.99.
 */
export const MAX_CALL_TOKENS = 20_000_000;

/** A provider's token count as a bucket: a whole number from 0 to MAX_CALL_TOKENS, else null (not reported). */
export function tokenCount(v: unknown): number | null {
  return typeof v === 'number' && v >= 0 && v <= MAX_CALL_TOKENS ? Math.round(v) : null;
}

/** The larger of two counts of one bucket; null when neither reported it. */
export function larger(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

/**
 * A cumulative usage report after an earlier one of the same answer (Gemini's `usageMetadata`, each chunk's count so
 * far): each bucket the larger of the two. Counts of one answer only grow; a report that falls (a broken or hostile
 * upstream's last chunk of 3 tokens after 700) is not believed, or the row would under-count what was spent.
 */
export function cumulative(earlier: Usage | null, later: Usage): Usage {
  if (earlier === null) return later;
  return {
    input: larger(earlier.input, later.input), cached: larger(earlier.cached, later.cached), cacheWrite: larger(earlier.cacheWrite, later.cacheWrite),
    output: larger(earlier.output, later.output), reasoning: larger(earlier.reasoning, later.reasoning),
  };
}
