// Gauges of the provider-reported quota (reported-quota.ts), read at scrape time from the in-memory store: one series
// per configured provider connection that reported, and per resource it reported. Labels come from the config
// (provider, connection) and a fixed set (resource), so cardinality is bounded.

import { Gauge } from 'prom-client';
import type { Config } from '../config/types.js';
import { METRIC } from '../telemetry/names.js';
import type { Metrics } from '../telemetry/metrics.js';
import { REPORTED_RESOURCES, usedRatio, type ReportedLimit, type ReportedQuotaStore } from './reported-quota.js';

const LABELS = ['provider', 'connection', 'resource'];

export function watchReportedQuota(metrics: Metrics, opts: { store: ReportedQuotaStore; config: () => Config; now?: () => number }): void {
  const now = opts.now ?? Date.now;
  const registers = [metrics.registry];
  const configured = (id: string) => Object.hasOwn(opts.config().providers, id);
  /** Each reported window: its labels and values. */
  const each = (fn: (labels: Record<string, string>, l: ReportedLimit) => void) => {
    for (const r of opts.store.all(configured)) {
      for (const resource of REPORTED_RESOURCES) {
        const l = r.limits[resource];
        if (l !== undefined) fn({ provider: r.provider, connection: r.connection, resource }, l);
      }
    }
  };
  const gauge = (name: string, help: string, value: (l: ReportedLimit) => number | null) =>
    new Gauge({
      name, help, labelNames: LABELS, registers,
      collect() {
        this.reset();
        each((labels, l) => {
          const v = value(l);
          // The store reads only finite, bounded figures (reported-quota.ts); a value that still is not one is left out
          // rather than exported as +Inf or NaN.
          if (v !== null && Number.isFinite(v)) this.set(labels, v);
        });
      },
    });
  gauge(METRIC.reportedLimit, 'The rate-limit window size the provider reported on its last response (requests or tokens).', (l) => l.limit);
  gauge(METRIC.reportedRemaining, 'What the provider reported as remaining in its rate-limit window on its last response.', (l) => l.remaining);
  gauge(METRIC.reportedUsedRatio, 'The used share of the provider-reported window (1 - remaining / limit).', usedRatio);
  gauge(METRIC.reportedResetSeconds, 'Seconds until the provider-reported window resets (0 once past).', (l) => (l.resetAt === null ? null : Math.max(0, (l.resetAt - now()) / 1000)));
  new Gauge({
    name: METRIC.reportedAgeSeconds, help: 'Seconds since the provider last reported its rate-limit state on a response.',
    labelNames: ['provider', 'connection'], registers,
    collect() {
      this.reset();
      for (const r of opts.store.all(configured)) this.set({ provider: r.provider, connection: r.connection }, Math.max(0, (now() - r.observedAt) / 1000));
    },
  });
}
