// Delivery of alerts to the outbound channels (email, webhook, or any Channel given). The dashboard channel is the
// ClickHouse alerts table the evaluator writes, not this module's concern.
//
// `notify` never waits and never throws: it appends the alert to each channel's own bounded queue. Each channel
// has one worker that sends its queue in order, retrying a failed send with exponential backoff, so a dead SMTP
// server delays only the email queue, never the webhook. Every alert handed over ends in exactly one
// `onResult(alert, result)` per channel: delivered, failed after the last attempt, refused because the queue was
// full, or abandoned at shutdown. The caller records the failures (ClickHouse row, metric); that is how a failed
// delivery is never lost silently. Backoff timers are unref()'d.

import { emailChannel, type EmailChannelConfig } from './channels/email.js';
import { webhookChannel, type WebhookChannelConfig } from './channels/webhook.js';
import type { Alert, Channel, DeliveryResult } from './types.js';

/** The validated `alerts.channels` section of the config. */
export interface AlertChannelsConfig {
  /** The dashboard list (the ClickHouse alerts table); default true. */
  readonly dashboard: boolean;
  /** `enabled: false` keeps the channel's settings but sends nothing to it. */
  readonly email?: EmailChannelConfig & { readonly enabled?: boolean };
  readonly webhook?: WebhookChannelConfig & { readonly enabled?: boolean };
}

/** The outbound channels a config turns on (email, webhook); the dashboard is not one of them. */
export function channelsFromConfig(cfg: AlertChannelsConfig): Channel[] {
  const out: Channel[] = [];
  if (cfg.email && cfg.email.enabled !== false) out.push(emailChannel(cfg.email));
  if (cfg.webhook && cfg.webhook.enabled !== false) out.push(webhookChannel(cfg.webhook));
  return out;
}

export interface NotifierLog {
  warn(obj: object, msg: string): void;
}

export interface NotifierOptions {
  /** Retries after the first attempt (default 3, so 4 attempts). */
  readonly retries?: number;
  /** The wait before the first retry, doubling each time (default 1000 ms). */
  readonly backoffMs?: number;
  /** The first wait in `test()`, doubling (default 200 ms): someone is waiting on the answer. */
  readonly testBackoffMs?: number;
  /** Alerts waiting per channel, the one in flight included (default 1000); beyond, 'queue_full'. */
  readonly queueMax?: number;
  /** How long `close()` lets the queues drain before abandoning what is left (default 15 s). */
  readonly closeTimeoutMs?: number;
  /** One call per alert and channel with the final outcome. A throwing hook is caught and logged. */
  readonly onResult?: (alert: Alert, result: DeliveryResult) => void;
  readonly log?: NotifierLog;
}

/** The `error` of an alert refused because the channel's queue is full. */
export const QUEUE_FULL = 'queue_full';
/** The `error` of an alert handed over after `close()`, or abandoned when `close()` ran out of time. */
export const SHUTDOWN = 'shutdown';

interface Job {
  readonly alert: Alert;
  /** Set once its result is reported; a late outcome after a shutdown report is ignored. */
  reported: boolean;
  attempts: number;
  lastError: string;
}

/** One channel's queue and worker. */
class Lane {
  readonly channel: Channel;
  readonly queue: Job[] = [];
  running: Promise<void> | null = null;
  inflight: Job | null = null;

  constructor(channel: Channel) {
    this.channel = channel;
  }
}

export class Notifier {
  readonly #lanes: Lane[];
  readonly #retries: number;
  readonly #backoffMs: number;
  readonly #testBackoffMs: number;
  readonly #queueMax: number;
  readonly #closeTimeoutMs: number;
  readonly #onResult: ((alert: Alert, result: DeliveryResult) => void) | undefined;
  readonly #log: NotifierLog | undefined;
  /** Pending backoff waits; close() cuts them short when its time is up. */
  readonly #sleeps = new Set<() => void>();
  #closed = false;
  #abandoned = false;
  #closing: Promise<void> | null = null;

  constructor(channels: readonly Channel[], opts: NotifierOptions = {}) {
    this.#lanes = channels.map((c) => new Lane(c));
    this.#retries = Math.max(0, Math.floor(opts.retries ?? 3));
    this.#backoffMs = Math.max(0, opts.backoffMs ?? 1000);
    this.#testBackoffMs = Math.max(0, opts.testBackoffMs ?? 200);
    this.#queueMax = Math.max(1, Math.floor(opts.queueMax ?? 1000));
    this.#closeTimeoutMs = Math.max(0, opts.closeTimeoutMs ?? 15_000);
    this.#onResult = opts.onResult;
    this.#log = opts.log;
  }

  /** Alerts queued or in flight, per channel name. */
  get pending(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of this.#lanes) out[l.channel.name] = (out[l.channel.name] ?? 0) + l.queue.length + (l.inflight ? 1 : 0);
    return out;
  }

  /** Hand an alert to every channel. Returns at once; never throws. */
  notify(alert: Alert): void {
    for (const lane of this.#lanes) {
      const job: Job = { alert, reported: false, attempts: 0, lastError: '' };
      if (this.#closed) {
        this.#report(lane, job, SHUTDOWN);
      } else if (lane.queue.length + (lane.inflight ? 1 : 0) >= this.#queueMax) {
        this.#report(lane, job, QUEUE_FULL);
      } else {
        lane.queue.push(job);
        if (lane.running === null) lane.running = this.#run(lane);
      }
    }
  }

  /** Resolves when every queue is empty and nothing is in flight (alerts handed over meanwhile included). */
  drain(): Promise<void> {
    return held(this.#drained());
  }

  async #drained(): Promise<void> {
    for (;;) {
      const running = this.#lanes.map((l) => l.running).filter((p): p is Promise<void> => p !== null);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  /**
   * Refuse new alerts, let the queues drain for up to `closeTimeoutMs`, then report what is left as 'shutdown'
   * (attempts so far, outcome unknown for a send still in flight), and close the channels.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /**
   * Send one alert to every channel now, bypassing the queues, with the same retries and a shorter backoff;
   * resolves with one result per channel, in channel order. `onResult` is not called: the results are the answer.
   */
  test(alert: Alert): Promise<DeliveryResult[]> {
    return held(
      Promise.all(
        this.#lanes.map(async (lane) => {
          const job: Job = { alert, reported: false, attempts: 0, lastError: '' };
          if (this.#closed) return result(lane.channel, job, SHUTDOWN);
          const delivered = await this.#attempts(lane.channel, job, this.#testBackoffMs);
          return result(lane.channel, job, delivered ? '' : job.lastError);
        }),
      ),
    );
  }

  async #close(): Promise<void> {
    this.#closed = true;
    // Not unref()'d: the process stays up until close() has finished, at most this long.
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.#closeTimeoutMs);
    });
    const outcome = await Promise.race([this.#drained().then(() => 'drained' as const), timeUp]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.#abandoned = true;
      for (const wake of this.#sleeps) wake();
      for (const lane of this.#lanes) {
        for (const job of lane.queue.splice(0)) this.#report(lane, job, SHUTDOWN);
        if (lane.inflight) this.#report(lane, lane.inflight, `${SHUTDOWN}: ${lane.inflight.lastError || 'send in flight, outcome unknown'}`);
      }
    }
    await Promise.all(
      this.#lanes.map(async (lane) => {
        try {
          await lane.channel.close?.();
        } catch (err) {
          this.#log?.warn({ channel: lane.channel.name, err: errorText(err) }, 'alert channel close failed');
        }
      }),
    );
  }

  /** The lane's worker: one alert at a time, in order, until the queue is empty. */
  async #run(lane: Lane): Promise<void> {
    try {
      for (let job = lane.queue.shift(); job !== undefined; job = lane.queue.shift()) {
        lane.inflight = job;
        const delivered = await this.#attempts(lane.channel, job, this.#backoffMs);
        lane.inflight = null;
        this.#report(lane, job, delivered ? '' : job.lastError);
      }
    } finally {
      lane.inflight = null;
      lane.running = null;
    }
  }

  /** Up to retries + 1 sends with exponential backoff; true once one succeeds. Never throws. */
  async #attempts(channel: Channel, job: Job, backoffMs: number): Promise<boolean> {
    for (let i = 0; i <= this.#retries; i++) {
      if (i > 0) {
        if (this.#abandoned) return false;
        await this.#sleep(backoffMs * 2 ** (i - 1));
        if (this.#abandoned) return false;
      }
      job.attempts = i + 1;
      try {
        await channel.send(job.alert);
        return true;
      } catch (err) {
        job.lastError = errorText(err);
      }
    }
    return false;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#sleeps.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.#sleeps.add(wake);
    });
  }

  /** The one report of a job; `error` '' means delivered. */
  #report(lane: Lane, job: Job, error: string): void {
    if (job.reported) return;
    job.reported = true;
    const r = result(lane.channel, job, error);
    if (!r.delivered) {
      this.#log?.warn(
        { channel: r.channel, alert_id: job.alert.id, kind: job.alert.kind, attempts: r.attempts, error: r.error },
        'alert delivery failed',
      );
    }
    try {
      this.#onResult?.(job.alert, r);
    } catch (err) {
      this.#log?.warn({ channel: r.channel, alert_id: job.alert.id, err: errorText(err) }, 'alert onResult hook threw');
    }
  }
}

/**
 * Keep the process alive while someone awaits `p`. Backoff timers are unref()'d so that an idle retry never holds
 * the process open; a caller awaiting drain() or test() (a CLI, a test, the shutdown path) must still get its answer.
 */
async function held<T>(p: Promise<T>): Promise<T> {
  const hold = setInterval(() => undefined, 1 << 30);
  try {
    return await p;
  } finally {
    clearInterval(hold);
  }
}

function result(channel: Channel, job: Job, error: string): DeliveryResult {
  return { channel: channel.name, delivered: error === '', attempts: job.attempts, error };
}

function errorText(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return (msg.trim() || 'unknown error').slice(0, 500);
}
