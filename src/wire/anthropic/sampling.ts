// The sampling parameters of an Anthropic upstream request, fitted to what the Messages API takes: its temperature
// range is 0..1 (OpenAI's and Gemini's 0..2), so a higher temperature is sent as 1 (docs/translation.md, "Fitted
// to the target's range"); with thinking on it refuses a temperature other than 1, any top_k and a top_p below
// 0.95, so those are removed and listed as dropped.

import type { CanonicalRequest } from '../canonical.js';
import type { BuildNotes } from '../fields.js';
import type { Json } from './json.js';

/** The highest temperature the Messages API accepts. */
export const MAX_TEMPERATURE = 1;

/** Puts the request's temperature, top_p and top_k on `body`; `thinking`: thinking is on for this request. */
export function putSampling(body: Json, req: CanonicalRequest, opts: { readonly thinking: boolean; readonly notes: BuildNotes }): void {
  const { thinking, notes } = opts;
  if (req.temperature !== undefined) {
    const temperature = Math.min(req.temperature, MAX_TEMPERATURE);
    if (!thinking || temperature === 1) body.temperature = temperature;
    else notes.drop('temperature');
  }
  if (req.topP !== undefined) {
    if (!thinking || req.topP >= 0.95) body.top_p = req.topP;
    else notes.drop('topP');
  }
  if (req.topK !== undefined) {
    if (!thinking) body.top_k = req.topK;
    else notes.drop('topK');
  }
}
