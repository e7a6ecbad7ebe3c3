// The config's checks that span keys and are shared with what runs it: a public listener's keys (the loader's check,
// and a live edit's against the address the gateway listens on: config/watch.ts), and the alert channels' URLs.

import { isIP } from 'node:net';

export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
}

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Values people leave in place of a key: shipped examples, defaults, words. Compared case-insensitively. */
const PLACEHOLDER_KEYS = new Set([
  'change-me', 'changeme', 'change_me', 'changeit', 'password', 'passw0rd', 'admin', 'secret', 'tollgate', 'default',
  'example', 'test', 'token', 'apikey', 'api-key', 'api_key', 'your-api-key', 'your-key-here', 'replace-me', 'xxx',
  'sk-xxx', '0000000000000000', '1234567890123456', 'tollgate-api-key', 'tollgate_api_key',
]);
export const MIN_KEY_LENGTH = 16;

/** Why `key` must not guard a public address (a known placeholder, or too short), or null when it may. */
export function weakKeyReason(key: string): string | null {
  if (PLACEHOLDER_KEYS.has(key.trim().toLowerCase())) return 'is a known placeholder';
  if (key.length < MIN_KEY_LENGTH) return `is shorter than ${MIN_KEY_LENGTH} characters`;
  return null;
}

/**
 * The keys a listener on `host` needs: one at least, none weak, unless the host is a loopback address. A live edit is
 * checked against the host the gateway listens on (config/watch.ts): an edit of server.host applies at a restart.
 */
export function keyIssues(host: unknown, keys: readonly unknown[]): ConfigIssue[] {
  if (typeof host !== 'string' || host === '' || isLoopback(host)) return [];
  const issues: ConfigIssue[] = [];
  if (keys.length === 0) issues.push({ path: 'server.api_keys', message: `at least one key is required when server.host (${host}) is not a loopback address` });
  keys.forEach((k: unknown, i) => {
    const reason = isObject(k) && typeof k.key === 'string' && k.key !== '' ? weakKeyReason(k.key) : null;
    if (reason !== null) {
      issues.push({
        path: `server.api_keys[${i}].key`,
        message: `${reason}: refused while server.host (${host}) is not a loopback address; generate one with \`openssl rand -hex 32\``,
      });
    }
  });
  return issues;
}

/**
 * The alert channels' URLs, which their channels parse: one that does not parse, or names another scheme, failed the
 * gateway's start (and a live edit half-applied) after `check-config` passed it. The value is not quoted: an SMTP
 * URL carries its password.
 */
export function channelUrlIssues(tree: Record<string, unknown>): ConfigIssue[] {
  const channels = isObject(tree.alerts) && isObject(tree.alerts.channels) ? tree.alerts.channels : {};
  const wanted = [
    ['email', 'smtp_url', ['smtp:', 'smtps:'], 'smtp://user:password@host:587 or smtps://...:465'],
    ['webhook', 'url', ['http:', 'https:'], 'http://host/path or https://...'],
  ] as const;
  const issues: ConfigIssue[] = [];
  for (const [channel, key, schemes, example] of wanted) {
    const c = channels[channel];
    const value = isObject(c) ? c[key] : undefined;
    // A channel turned off is not built: its URL is checked when it is turned on.
    if (typeof value !== 'string' || (isObject(c) && c.enabled === false)) continue;
    let scheme: string | null = null;
    try {
      scheme = new URL(value).protocol;
    } catch { /* not a URL */ }
    if (scheme === null || !(schemes as readonly string[]).includes(scheme)) {
      issues.push({ path: `alerts.channels.${channel}.${key}`, message: `${scheme === null ? 'is not a URL' : `names ${scheme}//`}: give ${example}` });
    }
  }
  return issues;
}
