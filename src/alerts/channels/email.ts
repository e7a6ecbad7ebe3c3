// The email channel: one message per alert over SMTP (nodemailer), subject `[Tollgate] <title>`, the alert's text
// and a facts block as the plain-text body.
//
// Not pooled: alerts are rare, so each delivery opens its own connection and nothing idles between alerts; close()
// aborts a send still in flight. Connect, greeting and socket inactivity each time out after 10 s and the whole
// send after 30 s, so a dead or stalled server fails the attempt instead of hanging the channel.
// `smtp_url` may carry credentials (`smtps://user:pass@host`): it is never logged, and errors name the host and
// port only, with the URL, user name and password scrubbed from whatever the server or socket said.

import type { Transporter } from 'nodemailer';
import type { Alert, Channel } from '../types.js';
import { credentials, cutOut } from './credentials.js';

export interface EmailChannelConfig {
  /** `smtp://` or `smtps://`, optionally with `user:pass@` and nodemailer query options. */
  readonly smtp_url: string;
  readonly from: string;
  readonly to: readonly string[];
}

export interface EmailChannelOptions {
  /** Connect and greeting timeout (default 10 s); socket inactivity after it a quarter second more. */
  readonly timeoutMs?: number;
  /** The whole send's deadline (default 3 x timeoutMs). */
  readonly sendTimeoutMs?: number;
}

/** The subject line: one line, whatever the title holds. */
export function emailSubject(a: Alert): string {
  return `[Tollgate] ${a.title.replace(/[\r\n]+/g, ' ').trim()}`;
}

/** The plain-text body: the notification text, then the alert's facts and numbers, one per line. */
export function emailText(a: Alert): string {
  const facts: [string, string][] = [
    ['kind', a.kind],
    ['severity', a.severity],
    ['subject', a.subject],
    ...(a.threshold === null ? [] : [['threshold', `${a.threshold}%`] as [string, string]]),
    ['window', a.window],
    ['fired at', new Date(a.firedAt).toISOString()],
    ...Object.entries(a.data).map(([k, v]): [string, string] => [k, v === null ? 'not reported' : String(v)]),
    ['alert id', a.id],
  ];
  const width = Math.max(...facts.map(([k]) => k.length)) + 1;
  const lines = facts.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`);
  return `${a.message}\n\n${lines.join('\n')}\n`;
}

/** How much longer the socket's inactivity timeout is than the connection's and the greeting's. */
const SOCKET_SLACK_MS = 250;

export function emailChannel(cfg: EmailChannelConfig, opts: EmailChannelOptions = {}): Channel {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const sendTimeoutMs = opts.sendTimeoutMs ?? 3 * timeoutMs;
  let url: URL;
  try {
    url = new URL(cfg.smtp_url);
  } catch {
    throw new Error('alerts.channels.email.smtp_url is not a valid URL');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new Error('alerts.channels.email.smtp_url must start with smtp:// or smtps://');
  }
  const where = `${url.hostname}:${url.port || (url.protocol === 'smtps:' ? '465' : '587')}`;
  const secrets = credentials(url, cfg.smtp_url);
  // close() aborts a send still in flight (the notifier has given up on it by then).
  const closing = new AbortController();
  // nodemailer is loaded by the first alert sent (alerts are rare; a gateway that sends none never loads it).
  let transport: Promise<Transporter> | null = null;
  const open = (): Promise<Transporter> =>
    (transport ??= import('nodemailer').then(({ createTransport }) => createTransport({
      url: cfg.smtp_url,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      // A server that never greets is silent on the socket too: nodemailer arms both timers as the socket connects,
      // and with equal timeouts (a connect within the same millisecond) the inactivity one fired first, reporting a
      // bare "Timeout". With the inactivity timer a quarter second later, the greeting's fires first and names what
      // the server failed to do.
      socketTimeout: timeoutMs + SOCKET_SLACK_MS,
      logger: false,
      debug: false,
    })));

  return {
    name: 'email',
    async send(a: Alert): Promise<void> {
      try {
        await (await open()).sendMail({
          from: cfg.from,
          to: [...cfg.to],
          subject: emailSubject(a),
          text: emailText(a),
          headers: { 'X-Tollgate-Event': a.kind, 'X-Tollgate-Delivery': a.id },
          signal: AbortSignal.any([AbortSignal.timeout(sendTimeoutMs), closing.signal]),
        });
      } catch (err) {
        const why = closing.signal.aborted ? 'channel closed' : describe(err, sendTimeoutMs);
        throw new Error(`smtp ${where}: ${scrub(why, secrets)}`);
      }
    },
    async close(): Promise<void> {
      closing.abort();
      (await transport?.catch(() => null))?.close();
    },
  };
}

function scrub(msg: string, secrets: readonly string[]): string {
  return cutOut(msg, secrets).replace(/\s+/g, ' ').trim().slice(0, 500);
}

function describe(err: unknown, sendTimeoutMs: number): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  if (code === 'EABORT' || err.name === 'AbortError') return `no delivery within ${sendTimeoutMs} ms`;
  return typeof code === 'string' && !err.message.includes(code) ? `${code} ${err.message}` : err.message;
}
