// Hostile provider-reported rate-limit headers (docs/quota.md, "Reported by the provider"): a reset or retry-after that
// is not a finite instant within a year of now is not said (null), a count that is not a plain number a double holds is
// not said, and the tollgate_provider_reported_* gauges never export +Inf or NaN.

import t from 'tap';
import { ReportedQuotaStore, parseReportedLimits, type ReportedQuota } from '../../src/accounting/reported-quota.js';
import { watchReportedQuota } from '../../src/accounting/reported-gauges.js';
import { Metrics } from '../../src/telemetry/metrics.js';
import type { Config } from '../../src/config/types.js';
import { metricValue } from '../helpers/prom.js';

const NOW = Date.UTC(2026, 10, 26, 8, 0, 0);
const DAY = 86_400_000;
const openaiReset = (reset: string) =>
  parseReportedLimits({ 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-reset-requests': reset }, NOW)?.limits.requests;
const anthropicReset = (reset: string) =>
  parseReportedLimits({ 'anthropic-ratelimit-tokens-limit': '1000', 'anthropic-ratelimit-tokens-remaining': '10', 'anthropic-ratelimit-tokens-reset': reset }, NOW)?.limits.tokens;

t.test('an OpenAI reset beyond a year, or not finite, is not said; the counts stay', async (t) => {
  for (const reset of ['999999999d', '9999999999999', `${'9'.repeat(400)}s`, '9'.repeat(400), '367d']) {
    t.same(openaiReset(reset), { limit: 100, remaining: 5, resetAt: null }, reset.length > 30 ? `${reset.length} chars` : reset);
  }
  t.same(openaiReset('366d'), { limit: 100, remaining: 5, resetAt: NOW + 366 * DAY }, 'the horizon: a year (366 days) ahead is still read');
  t.same(openaiReset('6m0s'), { limit: 100, remaining: 5, resetAt: NOW + 360_000 });
});

t.test('an Anthropic RFC 3339 reset beyond a year either way is not said', async (t) => {
  for (const reset of ['+200000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '2099-01-01T00:00:00Z', '1970-01-01T00:00:00Z', '-000001-01-01T00:00:00Z']) {
    t.same(anthropicReset(reset), { limit: 1000, remaining: 10, resetAt: null }, reset);
  }
  t.same(anthropicReset('2027-06-01T00:00:00Z'), { limit: 1000, remaining: 10, resetAt: Date.UTC(2027, 5, 1) }, 'within a year: read');
  t.same(anthropicReset('2026-11-26T07:59:00Z'), { limit: 1000, remaining: 10, resetAt: NOW - 60_000 }, 'a minute past: read (0 s to go)');
});

t.test('a retry-after beyond a year, or not finite, is not said', async (t) => {
  for (const ra of ['9999999999', '9000000000000', '9'.repeat(400), 'Wed, 21 Oct 2099 07:28:00 GMT']) {
    t.equal(parseReportedLimits({ 'retry-after': ra }, NOW), null, ra.length > 30 ? `${ra.length} chars` : ra);
  }
  t.same(parseReportedLimits({ 'retry-after': '3600' }, NOW), { limits: {}, retryUntil: NOW + 3_600_000 });
});

t.test('a limit or remaining that is not a count a double holds is not said', async (t) => {
  const counts = (limit: string, remaining: string) =>
    parseReportedLimits({ 'x-ratelimit-limit-tokens': limit, 'x-ratelimit-remaining-tokens': remaining }, NOW)?.limits.tokens ?? null;
  t.same(counts('9'.repeat(400), '5'), { limit: null, remaining: 5, resetAt: null }, '400 digits (Infinity)');
  t.same(counts('9007199254740993', '5'), { limit: null, remaining: 5, resetAt: null }, 'past 2^53 - 1');
  t.same(counts('9007199254740991', '5'), { limit: 9007199254740991, remaining: 5, resetAt: null }, '2^53 - 1 is a count');
  t.same(counts('100', '-5'), { limit: 100, remaining: null, resetAt: null }, 'negative');
  t.equal(counts('1e400', '-1'), null, 'neither readable: nothing reported');
});

const IDLE = () => ({ rows: 0, bytes: 0, oldestMs: null, up: true });
/** Samples whose value is not a finite number (a histogram's le="+Inf" label is not a value). */
const notFinite = (text: string) => text.split('\n').filter((l) => / (?:[+-]Inf|NaN)$/.test(l));
const config = () => ({ providers: { p: {} } }) as unknown as Config;

t.test('the gauges of a store fed hostile headers: no +Inf, no NaN, no series for what is not said', async (t) => {
  const store = new ReportedQuotaStore({ now: () => NOW });
  store.observe({
    connectionId: 'p#default', providerId: 'p', connection: 'default', status: 200,
    headers: {
      'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-reset-requests': '999999999d',
      'x-ratelimit-limit-tokens': '9'.repeat(400), 'x-ratelimit-remaining-tokens': '7', 'x-ratelimit-reset-tokens': '9999999999999',
    },
  });
  const metrics = new Metrics(IDLE, { processMetrics: false });
  watchReportedQuota(metrics, { store, config, now: () => NOW });
  const text = await metrics.registry.metrics();
  t.same(notFinite(text), [], 'no sample is +Inf or NaN');
  t.equal(metricValue(text, 'tollgate_provider_reported_used_ratio', { provider: 'p', resource: 'requests' }), 0.95);
  t.equal(metricValue(text, 'tollgate_provider_reported_remaining', { provider: 'p', resource: 'tokens' }), 7);
  t.notMatch(text, /tollgate_provider_reported_reset_seconds\{/, 'no reset series: neither reset was said');
  t.notMatch(text, /tollgate_provider_reported_limit\{[^}]*resource="tokens"/, 'no limit series for 400 digits');
});

t.test('the gauges leave out any value that is not finite, whatever the store holds', async (t) => {
  const state: ReportedQuota = {
    provider: 'p', connection: 'default', source: 'headers', observedAt: NOW, retryUntil: null,
    limits: { requests: { limit: Infinity, remaining: NaN, resetAt: Infinity }, tokens: { limit: 10, remaining: 4, resetAt: NOW + 1000 } },
  };
  const store = { all: () => [state] } as unknown as ReportedQuotaStore;
  const metrics = new Metrics(IDLE, { processMetrics: false });
  watchReportedQuota(metrics, { store, config, now: () => NOW });
  const text = await metrics.registry.metrics();
  t.same(notFinite(text), [], 'no sample is +Inf or NaN');
  t.notMatch(text, /resource="requests"/, 'no series for the non-finite window');
  t.equal(metricValue(text, 'tollgate_provider_reported_remaining', { provider: 'p', resource: 'tokens' }), 4, 'the finite window is still there');
  t.equal(metricValue(text, 'tollgate_provider_reported_reset_seconds', { provider: 'p', resource: 'tokens' }), 1);
});
