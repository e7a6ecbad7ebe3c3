// OpenAI Chat Completions usage -> the five buckets. OpenAI counts cached tokens inside prompt_tokens and
// reasoning tokens inside completion_tokens; both are taken out so no token is counted twice.

import { tokenCount, type Usage } from '../../ledger/types.js';

const n = tokenCount;

export function openaiUsage(raw: unknown): Usage | null {
  if (raw === null || typeof raw !== 'object') return null;
  const u = raw as Record<string, unknown>;
  const prompt = n(u.prompt_tokens);
  const completion = n(u.completion_tokens);
  if (prompt === null && completion === null) return null;
  const pd = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const cd = (u.completion_tokens_details ?? {}) as Record<string, unknown>;
  const cached = n(pd.cached_tokens);
  const reasoning = n(cd.reasoning_tokens);
  return {
    input: prompt === null ? null : Math.max(0, prompt - (cached ?? 0)),
    cached,
    cacheWrite: null,
    output: completion === null ? null : Math.max(0, completion - (reasoning ?? 0)),
    reasoning,
  };
}
