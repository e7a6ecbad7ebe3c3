// Alerts and budgets as one unit for app.ts: the budget engine, the notifier (rebuilt when the channels change in a
// live config edit), the evaluator service, and the recording of every delivery outcome (ClickHouse
// `alert_deliveries` and tollgate_notifications_total), so a failed delivery is never lost silently.

import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/types.js';
import type { ConfigHolder } from '../config/watch.js';
import type { UnstoredCalls } from '../accounting/unstored.js';
import type { ReportedQuota } from '../accounting/reported-quota.js';
import type { QuotaService } from '../accounting/quota.js';
import type { Store } from '../store/client.js';
import type { WriteFence } from '../store/write-fence.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { UsageRecord } from '../ledger/record.js';
import { BudgetService } from '../accounting/budget.js';
import { Notifier, channelsFromConfig } from './notifier.js';
import { AlertService, type Notify } from './service.js';
import { ALERT_KINDS, type Alert, type DeliveryResult } from './types.js';

export interface Alerting {
  readonly budget: BudgetService;
  readonly alerts: AlertService;
  /** Ledger sink: count the record's cost into the budget until it is written, and check soon. */
  published(r: UsageRecord): void;
  /** Writer hook: these rows are in ClickHouse now (the budget stops counting them apart; quota alerts look again). */
  written(ids: readonly string[]): void;
  reconfigure(next: Config): void;
  /** Resolves when the first evaluation has ended (AlertService.evaluated). */
  readonly evaluated: Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createAlerting(deps: {
  store: Store; config: ConfigHolder; quota: QuotaService; metrics: Metrics; log: FastifyBaseLogger;
  /** What providers report on their responses, for quota alerts (accounting/reported-quota.ts). */
  reported?: () => readonly ReportedQuota[];
  /** The batch writer, whose `written` events the budget takes: it tells the budget when an insert overlaps its read. */
  fence?: WriteFence;
  /** The list of billed records not yet written the budget keeps (shared with the quota: app.ts). */
  unstored?: UnstoredCalls;
}): Alerting {
  const { store, config, metrics, log } = deps;
  metrics.declareAlertKinds([...ALERT_KINDS, 'auto_switch']);
  const budget = new BudgetService(store, () => config.current, { ...(deps.fence === undefined ? {} : { fence: deps.fence }), ...(deps.unstored === undefined ? {} : { unstored: deps.unstored }) });
  const record = (a: Alert, r: DeliveryResult) => {
    // A failed delivery is logged once, by the notifier.
    metrics.notification(r.channel, r.delivered);
    store
      .insert('alert_deliveries', [{ alert_id: a.id, channel: r.channel, delivered: r.delivered, attempts: r.attempts, error: r.error, ts: Date.now() }])
      .catch((err: unknown) => log.error({ err, alert: a.id, channel: r.channel }, 'could not record an alert delivery'));
  };
  const build = (cfg: Config) => new Notifier(channelsFromConfig(cfg.alerts.channels), { onResult: record, log });
  let channels = JSON.stringify(config.current.alerts.channels);
  let notifier = build(config.current);
  // The service keeps one Notify; a live edit of the channels swaps the notifier behind it.
  const notify: Notify = {
    notify: (a) => notifier.notify(a),
    test: (a) => notifier.test(a),
    close: () => notifier.close(),
  };
  const alerts = new AlertService({
    store, config: () => config.current, quota: deps.quota, budget, notify, ...(deps.reported === undefined ? {} : { reported: deps.reported }),
    ...(deps.fence === undefined ? {} : { fence: deps.fence }),
    events: { fired: (kind) => metrics.alertFired(kind), delivery: record, error: (err) => log.error({ err }, 'alert evaluation failed') },
  });
  return {
    budget,
    alerts,
    published(r) {
      budget.published(r);
      alerts.poke();
    },
    written(ids) {
      budget.written(ids);
      // The quota reads only stored rows: a crossing they make is seen once they are in ClickHouse, so check again
      // then (with the shipped flush_ms of 1 s the check after `published` ran before the insert; without this the
      // next look was the 15 s timer's, or the next request's).
      if (ids.length > 0) alerts.poke();
    },
    reconfigure(next) {
      const now = JSON.stringify(next.alerts.channels);
      if (now === channels) return;
      channels = now;
      const old = notifier;
      notifier = build(next);
      void old.close().catch(() => undefined);
    },
    evaluated: alerts.evaluated,
    start: () => alerts.start(),
    close: () => alerts.close(),
  };
}
