// The five non-overlapping usage buckets of DESIGN.md decision 4. null = the provider did not report it;
// 0 = it reported zero. Totals are derived, never stored by a provider adapter.

export interface Usage {
  /** Input tokens that were not read from a cache. */
  readonly input: number | null;
  /** Input tokens read from a cache. */
  readonly cached: number | null;
  /** Input tokens written to a cache. */
  readonly cacheWrite: number | null;
  /**
   * Of `cacheWrite`, the tokens written to a cache that lasts an hour (Anthropic's
   * `cache_creation.ephemeral_1h_input_tokens`), which are billed at a higher rate than the rest (`price.cache_write_1h`,
   * src/ledger/cost.ts). Not a sixth bucket: totals do not add it again. Absent or null: every write at the one rate.
   */
  readonly cacheWrite1h?: number | null;
  /**
   * Web searches the provider ran for the call and bills per search, not per token (Anthropic's
   * `server_tool_use.web_search_requests`): priced at `price.web_search_per_1k` (src/ledger/cost.ts). Not tokens:
   * totals do not count them. Absent or null: none reported.
   */
  readonly webSearches?: number | null;
  /** Output tokens that are not reasoning. */
  readonly output: number | null;
  /** Reasoning (thinking) tokens. */
  readonly reasoning: number | null;
  /**
   * Of `input`, the audio tokens (OpenAI Chat's `prompt_tokens_details.audio_tokens`, Gemini's `AUDIO` prompt tokens
   * not read from its cache), billed at their own rate (`price.input_audio`, src/ledger/cost.ts). Of `output`
   * (`completion_tokens_details.audio_tokens`, Gemini's `AUDIO` candidates tokens), `audioOutput`
   * (`price.output_audio`). Parts, not buckets: totals do not add them again. Kept only when more than 0 (withAudio):
   * absent, none.
   */
  readonly audioInput?: number;
  readonly audioOutput?: number;
  /**
   * The service tier the provider says it served the call at, when it is not its standard one (OpenAI's `flex` or
   * `priority`, Anthropic's `priority`): it sets the call's prices (`price.service_tiers`, src/ledger/cost.ts).
   * Absent: the standard tier.
   */
  readonly serviceTier?: string;
}

export const NO_USAGE: Usage = Object.freeze({ input: null, cached: null, cacheWrite: null, output: null, reasoning: null });

/** Where the numbers came from: the upstream's own report, the gateway's estimate of a missing side (usage/estimate.ts), or nowhere. */
export const USAGE_SOURCES = ['reported', 'estimated', 'none'] as const;
export type UsageSource = (typeof USAGE_SOURCES)[number];

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
  const sum: { -readonly [K in keyof Usage]: Usage[K] } = {
    input: add(a.input, b.input),
    cached: add(a.cached, b.cached),
    cacheWrite: add(a.cacheWrite, b.cacheWrite),
    output: add(a.output, b.output),
    reasoning: add(a.reasoning, b.reasoning),
  };
  // The parts and counts most calls lack: present only when either call had them.
  const hour = add(a.cacheWrite1h ?? null, b.cacheWrite1h ?? null);
  if (hour !== null) sum.cacheWrite1h = hour;
  const searches = add(a.webSearches ?? null, b.webSearches ?? null);
  if (searches !== null) sum.webSearches = searches;
  const audioIn = (a.audioInput ?? 0) + (b.audioInput ?? 0);
  if (audioIn !== 0) sum.audioInput = audioIn;
  const audioOut = (a.audioOutput ?? 0) + (b.audioOutput ?? 0);
  if (audioOut !== 0) sum.audioOutput = audioOut;
  // The tier of the later call that reported one (a combo's: the member that answered); each call's cost was its own.
  const tier = b.serviceTier ?? a.serviceTier;
  if (tier !== undefined) sum.serviceTier = tier;
  return sum;
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

/**
 * The most web searches one call is believed to have run (Anthropic's `max_uses` caps a request's far below): with
 * `web_search_per_1k` at most 999 (src/config/schema.ts), a call's searches cost at most 99.9 USD, which keeps the
 * call's whole cost within the row's `cost` column beside its token buckets' most ($999,900: MAX_CALL_TOKENS).
 */
export const MAX_CALL_SEARCHES = 100;

/** A provider's count of searches run: a whole number from 0 to MAX_CALL_SEARCHES, else null (not reported). */
export function searchCount(v: unknown): number | null {
  return typeof v === 'number' && v >= 0 && v <= MAX_CALL_SEARCHES ? Math.round(v) : null;
}

/** The standard tiers' names (not kept: a call without a tier is at the standard one) and what a tier name may be. */
const STANDARD_TIERS: ReadonlySet<string> = new Set(['default', 'standard', 'auto']);
const TIER_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/** A provider's service tier as the usage keeps it: a short lower-case name that is not the standard tier, else undefined. */
export function serviceTierOf(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const tier = v.toLowerCase();
  return TIER_NAME.test(tier) && !STANDARD_TIERS.has(tier) ? tier : undefined;
}

/** `u` served at `tier` (serviceTierOf's reading of a provider's field); `u` itself when standard or unknown. */
export function atTier(u: Usage, tier: unknown): Usage {
  const t = serviceTierOf(tier);
  return t === undefined ? u : { ...u, serviceTier: t };
}

/** The larger of two counts of one bucket; null when neither reported it. */
export function larger(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

/**
 * `u` with its hour-long cache writes (`cacheWrite1h`): none when null, and never more than its cache writes (the part
 * cannot exceed the whole; a report that says so is believed for the whole).
 */
export function withHourWrites(u: Usage, hour: number | null): Usage {
  if (hour === null) return u;
  return { ...u, cacheWrite1h: Math.min(hour, u.cacheWrite ?? 0) };
}

/**
 * `u` with its audio parts (`audioInput` of `input`, `audioOutput` of `output`): each kept only when more than 0, and
 * never more than its whole (a report that says so is believed for the whole); `u` itself when there are none.
 */
export function withAudio(u: Usage, audioIn: number | null, audioOut: number | null): Usage {
  const i = audioIn === null ? 0 : Math.min(audioIn, u.input ?? 0);
  const o = audioOut === null ? 0 : Math.min(audioOut, u.output ?? 0);
  if (i === 0 && o === 0) return u;
  return { ...u, ...(i === 0 ? {} : { audioInput: i }), ...(o === 0 ? {} : { audioOutput: o }) };
}
