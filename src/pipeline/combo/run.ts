// A request to a combo: its members tried in the strategy's order (fallback, round-robin, capacity), or fanned out
// and judged (fusion.ts). Every upstream attempt is its own usage row (kind 'attempt', parent_id = the client's
// request id, the combo's name) with its own child span; the client's row (kind 'combo') carries the sum of its
// attempts' usage and cost. A member whose provider is cooling down is skipped; a failure before any byte reached
// the client moves on to the next member; when none is left the client gets the last failure as it came.

import { orderMembers, rotated } from '../../routing/combos.js';
import { runFusion } from './fusion.js';
import { takeFinalAttempt, attempt, usableMembers, type AttemptResult, type ComboRun } from './attempt.js';
import { fitRequest, type Exchange } from '../forward.js';
import { sendFailure } from '../upstream.js';

export async function runCombo(exchange: Exchange, combo: ComboRun): Promise<void> {
  exchange.trace.routedCombo(combo.name);
  const now = usableMembers(exchange, combo.name, orderMembers(exchange.ctx.config.current, combo.config, exchange.parsed));
  // Round-robin takes turns among the members usable now: rotated before the cooling ones were passed over, a cooling
  // member's turns went to the member after it, which then served two requests in three of a three-member combo.
  const usable = combo.config.strategy === 'round-robin' ? rotated(now, exchange.ctx.router.nextTurn(combo.name)) : now;
  if (combo.config.strategy === 'fusion') return runFusion(exchange, combo, usable);
  let last: AttemptResult | null = null;
  let n = 0;
  for (const member of usable) {
    // A later member is asked again when its turn comes: attempts since may have used its provider's quota up.
    if (n > 0 && exchange.ctx.router.quota.exhausted(member.route.providerId)) continue;
    const canonical = fitRequest(exchange.parsed, member.route, { model: exchange.parsed.model, thinking: member.thinking, stream: exchange.stream });
    last = await attempt(exchange, combo, { n: ++n, member, canonical });
    takeFinalAttempt(combo.outcome, last);
    if (last.failure === null) return; // answered (or the client went away)
    if (!last.failure.retryable) break; // the request itself was refused: another member would refuse it too
  }
  // No member answered: the client gets the last failure with its status and Retry-After, and the client request's
  // record that status (a member whose stream broke before any output had answered 200, which its attempt keeps).
  if (last?.failure && sendFailure(exchange.reply, last.failure, exchange.requestId)) combo.outcome.httpStatus = last.failure.status;
}
