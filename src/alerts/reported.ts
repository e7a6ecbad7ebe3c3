// Quota alerts from what providers report on their responses (accounting/reported-quota.ts): a connection's reported
// window at 80 % and 90 % used fires quota_warning, at 0 remaining quota_exhausted, with the same thresholds as the
// computed quota. Provider windows are short (a minute, for OpenAI and Anthropic rate limits) and roll
// continuously, so each key fires at most once per clock hour. Only fresh state counts: observed within the last
// 10 minutes and not past its reset.

import { REPORTED_RESOURCES, usedRatio, type ReportedQuota } from '../accounting/reported-quota.js';
import type { AlertKind } from './types.js';

/** What the evaluator hands each rule (a subset of its input and its `add`). */
export interface ReportedAlertInput {
  readonly now: number;
  readonly thresholds: readonly number[];
}

export interface ReportedCandidate {
  readonly kind: AlertKind;
  readonly severity: 'warning' | 'critical';
  readonly subject: string;
  readonly threshold: number;
  readonly window: string;
  readonly title: string;
  readonly message: string;
  readonly data: Readonly<Record<string, string | number | null>>;
}

export const REPORTED_FRESH_MS = 10 * 60_000;

export function reportedQuotaAlerts(reported: readonly ReportedQuota[], input: ReportedAlertInput, add: (c: ReportedCandidate) => void): void {
  const hour = `reported:${new Date(input.now).toISOString().slice(0, 13)}`;
  for (const r of reported) {
    if (input.now - r.observedAt > REPORTED_FRESH_MS) continue;
    for (const resource of REPORTED_RESOURCES) {
      const l = r.limits[resource];
      const ratio = l === undefined ? null : usedRatio(l);
      if (l === undefined || ratio === null || (l.resetAt !== null && l.resetAt <= input.now)) continue;
      const pct = Number((ratio * 100).toFixed(2));
      const subject = `${r.provider}/${r.connection}/${resource}`;
      const resets = l.resetAt === null ? '' : ` It resets at ${new Date(l.resetAt).toISOString()}.`;
      const data = { provider: r.provider, connection: r.connection, resource, source: r.source, limit: l.limit, remaining: l.remaining, percentage: pct, reset_at: l.resetAt === null ? null : new Date(l.resetAt).toISOString() };
      for (const threshold of input.thresholds) {
        if (pct < threshold) continue;
        add({
          kind: 'quota_warning', severity: 'warning', subject, threshold, window: hour,
          title: `Quota warning: ${r.provider} (${r.connection}) reports ${pct}% of its ${resource} limit used`,
          message: `${r.provider}, connection ${r.connection}, reported ${l.remaining} of ${l.limit} ${resource} remaining (${pct}% used) on its last response.${resets}`,
          data: { ...data, threshold },
        });
      }
      if (l.remaining === 0) {
        add({
          kind: 'quota_exhausted', severity: 'critical', subject, threshold: 100, window: hour,
          title: `Quota exhausted: ${r.provider} (${r.connection}) reports no ${resource} left`,
          message: `${r.provider}, connection ${r.connection}, reported 0 of ${l.limit} ${resource} remaining on its last response.${resets}`,
          data: { ...data, threshold: 100 },
        });
      }
    }
  }
}
