// Combos (spec item 7): named groups of `<provider>/<model>` members addressed by their bare name. This module is
// pure: it resolves the members and orders them for one request; the proxy runs the attempts.
//
// - fallback:    config order.
// - round-robin: config order rotated by one per request, over the members usable now (pipeline/combo/run.ts).
// - capacity:    a request with images (or PDFs) goes first to members whose capabilities include vision (pdf), in
//                config order, then to the others (which only see it once no capable member is left).
// - fusion:      every member in parallel; the judge synthesises (pipeline/combo/fusion.ts).

import type { ComboConfig, Config } from '../config/types.js';
import type { CanonicalRequest, ThinkingLevel } from '../wire/canonical.js';
import { parseThinkingSuffix } from '../wire/thinking.js';
import { resolveModel, type Route } from './resolve.js';
import { own } from '../core/own.js';
import { splitModelSpec } from '../config/model-spec.js';

export interface Member {
  /** The member as written in the combo (may carry a `(level)` suffix). */
  readonly spec: string;
  /** `<provider>/<model>` without the suffix. */
  readonly model: string;
  readonly thinking?: ThinkingLevel;
  readonly route: Route;
}

export function comboOf(cfg: Config, name: string): ComboConfig | undefined {
  return own(cfg.combos, name);
}

export function member(cfg: Config, spec: string): Member {
  const { model, thinking } = parseThinkingSuffix(spec);
  return thinking === undefined ? { spec, model, route: resolveModel(cfg, model) } : { spec, model, thinking, route: resolveModel(cfg, model) };
}

/** The media a request carries that need a capability: 'vision' for images, 'pdf' for files. */
export function neededCapabilities(req: CanonicalRequest): Set<'vision' | 'pdf'> {
  const need = new Set<'vision' | 'pdf'>();
  const visit = (parts: CanonicalRequest['system']): void => {
    for (const p of parts) {
      if (p.type === 'image') need.add('vision');
      else if (p.type === 'file') need.add('pdf');
      else if (p.type === 'tool_result') visit(p.content);
    }
  };
  visit(req.system);
  for (const m of req.messages) visit(m.content);
  return need;
}

/** `members` rotated by `turn` (the combo's request counter): round-robin's order. */
export function rotated<T>(members: readonly T[], turn: number): T[] {
  const k = members.length === 0 ? 0 : turn % members.length;
  return [...members.slice(k), ...members.slice(0, k)];
}

/**
 * Members in the order this request tries them: config order, the capable ones first for `capacity`. Round-robin's
 * rotation is over the members usable now (runCombo: `rotated`), so that a cooling one's turns are shared.
 */
export function orderMembers(cfg: Config, combo: ComboConfig, req: CanonicalRequest): Member[] {
  const members = combo.models.map((spec) => member(cfg, spec));
  switch (combo.strategy) {
    case 'capacity': {
      const need = neededCapabilities(req);
      if (need.size === 0) return members;
      const capable = (m: Member) => [...need].every((c) => m.route.modelConfig?.capabilities.includes(c) === true);
      return [...members.filter(capable), ...members.filter((m) => !capable(m))];
    }
    default:
      return members;
  }
}

/**
 * Does a request for `model` (a combo name, suffix allowed) ask the quota gate? A combo skips a member whose provider's
 * quota is used up (pipeline/combo/attempt.ts), so it does when a member's provider has a quota that can be: the
 * requests the start holds until the quota's figures are known (routing/start-hold.ts).
 */
/** The provider prefix of a member's spec (`<provider>/<model>`, a thinking suffix allowed); undefined without one. */
export function memberProvider(spec: string): string | undefined {
  return splitModelSpec(parseThinkingSuffix(spec).model)?.provider;
}

export function quotaDecides(cfg: Config, model: string): boolean {
  const combo = comboOf(cfg, parseThinkingSuffix(model).model);
  if (combo === undefined) return false;
  // A fusion combo's judge too: it is not called on a provider out of quota (pipeline/combo/fusion.ts).
  return [...combo.models, ...(combo.judge === undefined ? [] : [combo.judge])].some((spec) => {
    const provider = memberProvider(spec);
    const quota = provider === undefined ? undefined : own(cfg.providers, provider)?.quota;
    return quota !== undefined && quota.kind !== 'unlimited';
  });
}
