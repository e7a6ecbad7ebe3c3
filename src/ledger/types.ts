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
