// OpenAI Chat Completions usage -> the five buckets. OpenAI counts cached tokens inside prompt_tokens and
// reasoning tokens inside completion_tokens; both are taken out so no token is counted twice.
// OpenAI-compatible vendors that differ (docs/translation.md, "Usage"):
// - the cache reads where OpenAI has none: DeepSeek's top-level `prompt_cache_hit_tokens`, Moonshot's (Kimi)
//   top-level `cached_tokens`; both inside prompt_tokens as OpenAI's. `prompt_tokens_details.cached_tokens` wins.
// - reasoning OUTSIDE completion_tokens (xAI: "counted separately from completion_tokens, but in total_tokens"): told
//   by total_tokens, which is then prompt + completion + reasoning; otherwise OpenAI's rule.
// Audio (gpt-4o-audio-preview): `prompt_tokens_details.audio_tokens` inside prompt_tokens and
// `completion_tokens_details.audio_tokens` inside completion_tokens, billed at their own rates: kept as the audio parts
// of input and output (withAudio; a cached prompt's audio is taken as cached first only past the uncached input).

import { atTier, tokenCount, withAudio, type Usage } from '../../ledger/types.js';

const n = tokenCount;

/** The usage of a completion or a chunk; `tier`, its `service_tier` (flex and priority are priced apart). */
export function openaiUsage(raw: unknown, tier?: unknown): Usage | null {
  if (raw === null || typeof raw !== 'object') return null;
  const u = raw as Record<string, unknown>;
  const prompt = n(u.prompt_tokens);
  const completion = n(u.completion_tokens);
  if (prompt === null && completion === null) return null;
  const pd = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const cd = (u.completion_tokens_details ?? {}) as Record<string, unknown>;
  const hits = n(pd.cached_tokens) ?? n(u.prompt_cache_hit_tokens) ?? n(u.cached_tokens);
  // A part of prompt_tokens: never more than the whole (a vendor's count past it is believed for the whole).
  const cached = hits === null || prompt === null ? hits : Math.min(hits, prompt);
  const thought = n(cd.reasoning_tokens);
  const apart = completion !== null && reasoningApart(u, prompt, completion, thought);
  // Inside completion_tokens (OpenAI's rule): never more than it either.
  const reasoning = thought === null || completion === null || apart ? thought : Math.min(thought, completion);
  const usage: Usage = {
    input: prompt === null ? null : Math.max(0, prompt - (cached ?? 0)),
    cached,
    cacheWrite: null,
    output: completion === null ? null : apart ? completion : completion - (reasoning ?? 0),
    reasoning,
  };
  return atTier(withAudio(usage, n(pd.audio_tokens), n(cd.audio_tokens)), tier);
}

/** Whether the reasoning tokens are outside completion_tokens (xAI): total_tokens counts them on top of it. */
function reasoningApart(u: Record<string, unknown>, prompt: number | null, completion: number, reasoning: number | null): boolean {
  if (reasoning === null || reasoning === 0 || prompt === null) return false;
  const total = n(u.total_tokens);
  return total !== null && total === prompt + completion + reasoning;
}
