// The budget auto-switch routing step (spec item 6): when the daily budget is exceeded and
// `budgets.auto_switch.enabled`, a request's target is rewritten to the configured free model or combo. The budget
// evaluation itself lives with the alerts; this step only asks a BudgetGate.

import type { Config } from '../config/types.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { own } from '../core/own.js';
import { splitModelSpec } from '../config/model-spec.js';

export interface BudgetGate {
  /** True while the daily budget is exceeded (until its window resets). */
  dailyExceeded(): boolean;
}

export const NEVER_EXCEEDED: BudgetGate = { dailyExceeded: () => false };

export interface Target {
  /** The model or combo to route (suffix kept, as the client or the config wrote it). */
  readonly model: string;
  /** The target was rewritten by the auto-switch. */
  readonly switched: boolean;
}

/**
 * Does `model` (a `<provider>/<model>` or a combo name, suffix allowed) spend nothing? Free and subscription
 * providers bill nothing per request (their rows' cost is 0), so only a paid target is switched; a combo spends
 * nothing when its members and its fusion judge do not (a paid judge of free members spent on after the budget).
 */
function spendsNothing(cfg: Config, model: string): boolean {
  const bare = parseThinkingSuffix(model).model;
  const spec = splitModelSpec(bare);
  if (spec !== null) {
    const group = own(cfg.providers, spec.provider)?.group;
    return group === 'free' || group === 'subscription';
  }
  const combo = own(cfg.combos, bare);
  return combo !== undefined && combo.models.every((m) => spendsNothing(cfg, m)) && (combo.judge === undefined || spendsNothing(cfg, combo.judge));
}

/** Does the auto-switch target name a configured model or combo? (If not, nothing is switched; app.ts warns.) */
export function switchTargetExists(cfg: Config, to: string): boolean {
  const bare = parseThinkingSuffix(to).model;
  if (Object.hasOwn(cfg.combos, bare)) return true;
  const spec = splitModelSpec(bare);
  const p = spec === null ? undefined : own(cfg.providers, spec.provider);
  return spec !== null && p !== undefined && (p.allow_unlisted_models || Object.hasOwn(p.models, spec.modelId));
}

/** Would the auto-switch rewrite `requested` once the budget is exceeded? (A paid model or combo, the switch on.) */
function switchable(cfg: Config, requested: string): boolean {
  const to = cfg.budgets.auto_switch?.to;
  if (!cfg.budgets.auto_switch?.enabled || !to || requested === to || spendsNothing(cfg, requested)) return false;
  // A name nothing is configured under is the client's mistake, answered 404 whatever the budget, not another model.
  return switchTargetExists(cfg, to) && switchTargetExists(cfg, requested);
}

/**
 * Does the auto-switch's answer for `requested` depend on the budget gate? True when it would switch it and a daily
 * budget is set (without one the gate never closes): the requests the start holds until the budget's figures are
 * known (routing/start-hold.ts).
 */
export function budgetDecides(cfg: Config, requested: string): boolean {
  return cfg.budgets.daily_usd !== undefined && switchable(cfg, requested);
}

export function autoSwitch(cfg: Config, requested: string, budget: BudgetGate): Target {
  if (!switchable(cfg, requested) || !budget.dailyExceeded()) return { model: requested, switched: false };
  return { model: cfg.budgets.auto_switch.to!, switched: true };
}
