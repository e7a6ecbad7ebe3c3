// An alert, as the evaluator raises it and every channel delivers it (dashboard list, email, webhook). Pure data.

export const ALERT_KINDS = [
  'quota_warning', 'quota_exhausted', 'quota_reset', 'daily_budget', 'monthly_budget', 'cost_anomaly', 'exhaustion_pattern',
] as const;
/** The kinds of the spec's Events table (switchable in `alerts.kinds`), plus `auto_switch` and `test`. */
export type AlertKind = (typeof ALERT_KINDS)[number] | 'auto_switch' | 'test';

export type Severity = 'info' | 'warning' | 'critical';

export interface Alert {
  /** UUIDv7. */
  readonly id: string;
  readonly kind: AlertKind;
  readonly severity: Severity;
  /** What it is about: a provider id, `daily` / `monthly` (budgets), `cost` (anomaly), `test`. */
  readonly subject: string;
  /** The threshold crossed, in percent (80, 90, 100, 50, ...); null when the kind has none. */
  readonly threshold: number | null;
  /** The window the alert belongs to (fires once per kind, subject, threshold and window), e.g. a reset instant. */
  readonly window: string;
  /** One line, for a subject line or a list. */
  readonly title: string;
  /** The notification text (provider or budget, percentage, remaining amount, time to reset, ...). */
  readonly message: string;
  /** The numbers behind the text, for machines (webhook body, dashboard). */
  readonly data: Readonly<Record<string, number | string | null>>;
  /** Epoch ms. */
  readonly firedAt: number;
}

export type ChannelName = 'dashboard' | 'email' | 'webhook';

export interface DeliveryResult {
  readonly channel: ChannelName;
  readonly delivered: boolean;
  readonly attempts: number;
  /** The last error when not delivered ('' otherwise); never contains a secret. */
  readonly error: string;
}

/** A delivery channel. `send` throws on failure; the notifier retries. */
export interface Channel {
  readonly name: ChannelName;
  send(a: Alert): Promise<void>;
  close?(): Promise<void>;
}
