// Anthropic Messages usage -> the five buckets (DESIGN.md decision 4), and back.
// Anthropic's input_tokens already EXCLUDES cache reads and writes, so the three input-side fields map one to one:
//   input = input_tokens, cached = cache_read_input_tokens, cacheWrite = cache_creation_input_tokens.
// Thinking is counted inside output_tokens and not split out, so reasoning stays null, unless the answer carries
// `output_tokens_details.thinking_tokens` (seen in newer SDK typings): then those tokens move from output to
// reasoning, so no token is counted twice.
// Cache writes come in two lifetimes, `cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}`, inside
// cache_creation_input_tokens; the hour-long ones bill higher, so they are kept as cacheWrite1h (a part of cacheWrite).
// Searches of the server-side web_search tool are billed per search: `server_tool_use.web_search_requests` is kept as
// webSearches (not tokens).

import { atTier, larger, searchCount, tokenCount, withHourWrites, type Usage } from '../../ledger/types.js';
import { isObj } from './json.js';

const n = tokenCount;

/** Usage from a Message's `usage`, message_start's `message.usage` or message_delta's `usage`. null: nothing usable. */
export function anthropicUsage(raw: unknown): Usage | null {
  if (!isObj(raw)) return null;
  const input = n(raw.input_tokens);
  const cached = n(raw.cache_read_input_tokens);
  const cacheWrite = n(raw.cache_creation_input_tokens);
  const outputTokens = n(raw.output_tokens);
  if (input === null && cached === null && cacheWrite === null && outputTokens === null) return null;
  const thinking = isObj(raw.output_tokens_details) ? n(raw.output_tokens_details.thinking_tokens) : null;
  const reasoning = outputTokens === null ? null : thinking;
  const usage: Usage = {
    input,
    cached,
    cacheWrite,
    output: outputTokens === null ? null : Math.max(0, outputTokens - (reasoning ?? 0)),
    reasoning: reasoning === null ? null : Math.min(reasoning, outputTokens ?? 0),
  };
  const hour = cacheWrite === null || !isObj(raw.cache_creation) ? usage : withHourWrites(usage, n(raw.cache_creation.ephemeral_1h_input_tokens));
  const searches = isObj(raw.server_tool_use) ? searchCount(raw.server_tool_use.web_search_requests) : null;
  return atTier(searches === null ? hour : { ...hour, webSearches: searches }, raw.service_tier);
}

/**
 * A later report over an earlier one, bucket by bucket: the input side the larger of the two (message_delta's counts
 * are cumulative: one lower than message_start's is not believed), what the later one omits stays; the output side
 * the later report's, whole. The service tier is the later report's when it names one (`laterTier`, its raw
 * `service_tier`), the standard tier included: message_start's `priority` then message_delta's `standard` is a call
 * served (and billed) at standard; a later report that names none keeps the earlier one's.
 */
export function mergeUsage(earlier: Usage | null, later: Usage | null, laterTier?: unknown): Usage | null {
  if (earlier === null) return later;
  if (later === null) return earlier;
  // Output and reasoning come from the same report (output_tokens and its details): never mix two reports there.
  const laterHasOutput = later.output !== null || later.reasoning !== null;
  const merged: Usage = {
    input: larger(earlier.input, later.input),
    cached: larger(earlier.cached, later.cached),
    cacheWrite: larger(earlier.cacheWrite, later.cacheWrite),
    output: laterHasOutput ? later.output : earlier.output,
    reasoning: laterHasOutput ? later.reasoning : earlier.reasoning,
  };
  const withHour = withHourWrites(merged, larger(earlier.cacheWrite1h ?? null, later.cacheWrite1h ?? null));
  const searches = larger(earlier.webSearches ?? null, later.webSearches ?? null);
  const counted = searches === null ? withHour : { ...withHour, webSearches: searches };
  const tier = typeof laterTier === 'string' ? later.serviceTier : (later.serviceTier ?? earlier.serviceTier);
  return tier === undefined ? counted : { ...counted, serviceTier: tier };
}

export interface AnthropicUsageJson {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
  /** The cache writes by lifetime, when the usage says how many lasted an hour. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** The server-side tools' uses, when the usage reports web searches. */
  server_tool_use?: { web_search_requests: number };
}

/** Canonical usage in Anthropic's shape: unknown buckets are 0 (Anthropic always reports numbers); reasoning goes
 * back inside output_tokens, where Anthropic counts it. */
export function renderUsage(u: Usage | null): AnthropicUsageJson {
  const json: AnthropicUsageJson = {
    input_tokens: u?.input ?? 0,
    cache_creation_input_tokens: u?.cacheWrite ?? 0,
    cache_read_input_tokens: u?.cached ?? 0,
    output_tokens: (u?.output ?? 0) + (u?.reasoning ?? 0),
  };
  const hour = u?.cacheWrite1h ?? null;
  if (hour !== null) json.cache_creation = { ephemeral_5m_input_tokens: json.cache_creation_input_tokens - hour, ephemeral_1h_input_tokens: hour };
  const searches = u?.webSearches ?? null;
  if (searches !== null) json.server_tool_use = { web_search_requests: searches };
  return json;
}
