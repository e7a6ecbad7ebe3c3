// A request to a combo: its members tried in the strategy's order (fallback, round-robin, capacity), or fanned out
// and judged (fusion.ts). Every upstream attempt is its own usage row (kind 'attempt', parent_id = the client's
// request id, the combo's name) with its own child span; the client's row (kind 'combo') carries the sum of its
// attempts' usage and cost. A member whose provider is cooling down is skipped; a failure before any byte reached
// the client moves on to the next member; when none is left the client gets the last failure as it came.

import type { ComboConfig } from '../../config/types.js';
import { orderMembers } from '../../routing/combos.js';
import { runFusion } from './fusion.js';
import { adopt, attempt, usableMembers, type AttemptResult } from './attempt.js';
import type { Outcome } from '../outcome.js';
import { fitRequest, type Exchange } from '../forward.js';
import { sendFailure } from '../upstream-call.js';


export async function runCombo(x: Exchange, name: string, combo: ComboConfig, co: Outcome): Promise<void> {
  x.trace.routedCombo(name);
  const members = orderMembers(x.ctx.config.current, combo, x.parsed, x.ctx.router.nextTurn(name));
  const usable = usableMembers(x, name, members);
  if (combo.strategy === 'fusion') return runFusion(x, name, combo, usable, co);
  let last: AttemptResult | null = null;
  for (const [i, m] of usable.entries()) {
    const canonical = fitRequest(x.parsed, m.route, x.parsed.model, m.thinking, x.stream);
    last = await attempt(x, name, i + 1, m, canonical, co);
    adopt(co, last);
    if (last.failure === null) return; // answered (or the client went away)
    if (!last.failure.retryable) break; // the request itself was refused: another member would refuse it too
  }
  // No member answered: the client gets the last failure with its status and Retry-After.
  if (last?.failure) sendFailure(x.reply, last.failure, x.requestId);
}
