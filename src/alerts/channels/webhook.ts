// The webhook channel: one POST of the alert as JSON per delivery, signed Stripe-style when a secret is set.
//
//   x-tollgate-timestamp: <unix seconds>
//   x-tollgate-signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
//
// The timestamp is inside the signed bytes, so a receiver that checks the signature and rejects timestamps older
// than a tolerance (5 minutes) also rejects replays; `x-tollgate-delivery` (the alert id) de-duplicates retries.
// A 2xx answer is a delivery; any other status, a transport error or the 10 s deadline throws, and the notifier
// retries. close() aborts a send in flight. Errors never carry the URL's path or query (they may hold a token):
// only the status and the first bytes of the answer (path and query cut out), or the socket error (host:port).

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Agent } from 'undici';
import { undici } from '../../core/undici.js';
import { withoutSecrets } from '../../core/secrets.js';
import type { Alert, Channel } from '../types.js';
import { credentials, cutOut, decoded } from './credentials.js';

export interface WebhookChannelConfig {
  readonly url: string;
  readonly secret?: string;
}

export interface WebhookChannelOptions {
  /** The whole request's deadline, connect to last body byte (default 10 s). */
  readonly timeoutMs?: number;
  /** Epoch ms, for the timestamp header (tests). */
  readonly now?: () => number;
}

export const WEBHOOK_HEADERS = {
  event: 'x-tollgate-event',
  delivery: 'x-tollgate-delivery',
  timestamp: 'x-tollgate-timestamp',
  signature: 'x-tollgate-signature',
} as const;

/** The JSON body of a webhook delivery. */
export interface WebhookPayload {
  readonly id: string;
  readonly kind: Alert['kind'];
  readonly severity: Alert['severity'];
  readonly subject: string;
  readonly threshold: number | null;
  readonly window: string;
  readonly title: string;
  readonly message: string;
  readonly data: Alert['data'];
  /** ISO 8601, UTC. */
  readonly fired_at: string;
}

export function webhookPayload(a: Alert): WebhookPayload {
  return {
    id: a.id, kind: a.kind, severity: a.severity, subject: a.subject, threshold: a.threshold, window: a.window,
    title: a.title, message: a.message, data: a.data, fired_at: new Date(a.firedAt).toISOString(),
  };
}

/** `sha256=<hex>` over `"<timestamp>.<body>"`: the value of `x-tollgate-signature`. */
export function signPayload(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body);
  return `sha256=${mac.digest('hex')}`;
}

/**
 * What a receiver runs on a delivery: true when `header` (x-tollgate-signature) is the HMAC of
 * `"<timestamp>.<raw body>"` under `secret` and `timestamp` (x-tollgate-timestamp, unix seconds) is within
 * `toleranceS` of `now` (epoch ms). `body` must be the raw bytes as received, not re-serialised JSON.
 * Constant-time comparison.
 */
export function verifySignature(
  secret: string,
  timestamp: string | number | undefined,
  body: string | Uint8Array,
  header: string | undefined,
  toleranceS = 300,
  now: number = Date.now(),
): boolean {
  if (header === undefined || timestamp === undefined) return false;
  const ts = String(timestamp);
  if (!/^[0-9]{1,12}$/.test(ts)) return false;
  if (Math.abs(now / 1000 - Number(ts)) > toleranceS) return false;
  const expected = Buffer.from(signPayload(secret, ts, body));
  const given = Buffer.from(header.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function webhookChannel(cfg: WebhookChannelConfig, opts: WebhookChannelOptions = {}): Channel {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const now = opts.now ?? Date.now;
  let url: URL;
  try {
    url = new URL(cfg.url);
  } catch {
    throw new Error('alerts.channels.webhook.url is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error('alerts.channels.webhook.url must be http or https');
  }
  // Its own agent, made by the first send (undici is loaded then), so close() can release its sockets; redirects are
  // not followed (a 3xx is a failure).
  let agent: Agent | undefined;
  // The URL's user and password (`https://user:pass@host/...`) are sent as HTTP Basic authentication, as curl sends
  // them: undici drops them from a URL (a receiver behind Basic auth refused every delivery, nothing saying why).
  const basic = url.username === '' && url.password === '' ? null : `Basic ${Buffer.from(`${decoded(url.username)}:${decoded(url.password)}`).toString('base64')}`;
  // Cut out of an error page that echoes them: alone from 3 characters, as the `user:pass` pair at any length
  // (credentials.ts), and the header's base64. The user too: `https://TOKEN@host/...` carries its token as the user.
  const userinfo = basic === null ? [] : [basic.slice('Basic '.length), ...credentials(url, cfg.url)];
  url.username = '';
  url.password = '';
  // close() aborts a send still in flight (the notifier has given up on it by then).
  const closing = new AbortController();
  // An error page may echo the request path or query (a 404 naming it): cut them out of the recorded snippet, whole,
  // and then each path segment and query value that may be a token, in the forms an answer may quote them (JSON with
  // `\/`, percent-encoded or decoded): a receiver that names only the token, or escapes the path, quoted it before.
  const secrets = [url.pathname + url.search, url.search, url.pathname].filter((x) => x.length > 1);
  // The query's values as written too (`searchParams` reads `+` as a space), and a bare `?TOKEN` (a key with no value);
  // a parameter's name is kept, so an answer that names it still says which one it means.
  const rawQuery = url.search.slice(1).split('&').map((kv) => (kv.includes('=') ? kv.slice(kv.indexOf('=') + 1) : kv));
  const pieces = [...secrets, ...url.pathname.split('/'), ...rawQuery, ...url.searchParams.values(), ...userinfo].flatMap((x) => [x, decoded(x)]);
  const tokens = [...new Set(pieces)].sort((a, b) => b.length - a.length);
  // Cut out of an error page whole first, longest first: the whole path before the user name that may be in it.
  const cut = [...userinfo, ...secrets].sort((a, b) => b.length - a.length);

  return {
    name: 'webhook',
    async send(a: Alert): Promise<void> {
      const body = JSON.stringify(webhookPayload(a));
      const timestamp = Math.floor(now() / 1000);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'tollgate',
        [WEBHOOK_HEADERS.event]: a.kind,
        [WEBHOOK_HEADERS.delivery]: a.id,
        [WEBHOOK_HEADERS.timestamp]: String(timestamp),
      };
      if (cfg.secret) headers[WEBHOOK_HEADERS.signature] = signPayload(cfg.secret, timestamp, body);
      if (basic !== null) headers.authorization = basic;
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([deadline, closing.signal]);
      let status: number;
      let answer: string;
      try {
        const { Agent, request } = await undici();
        if (closing.signal.aborted) throw new Error('closed while undici loaded');
        agent ??= new Agent({ connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
        const res = await request(url, { method: 'POST', headers, body, dispatcher: agent, signal });
        status = res.statusCode;
        answer = status >= 200 && status < 300 ? '' : await head(res.body);
        await res.body.dump();
      } catch (err) {
        if (closing.signal.aborted) throw new Error('webhook: channel closed');
        throw new Error(deadline.aborted ? `webhook: no answer within ${timeoutMs} ms` : `webhook: ${transportError(err)}`);
      }
      if (status < 200 || status >= 300) {
        const snippet = withoutSecrets(cutOut(answer, cut), tokens).replace(/\s+/g, ' ').trim().slice(0, 200);
        throw new Error(`webhook: HTTP ${status}${snippet ? ` ${snippet}` : ''}`);
      }
    },
    async close(): Promise<void> {
      closing.abort();
      await agent?.close();
    },
  };
}

/** The first bytes of an error answer, for the recorded error (the rest is discarded). */
async function head(body: AsyncIterable<Uint8Array>, max = 1024): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    parts.push(Buffer.from(c));
    n += c.length;
    if (n >= max) break;
  }
  return Buffer.concat(parts).subarray(0, max).toString('utf8');
}

/** A socket-level error without the request URL: its code and message (undici and node put host:port at most). */
function transportError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code ?? (err as { code?: unknown }).code;
  const msg = cause?.message ?? err.message;
  return typeof code === 'string' && !msg.includes(code) ? `${code} ${msg}` : msg;
}
