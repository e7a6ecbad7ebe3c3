// Reading provider-reported rate limits (accounting/reported-quota.ts): both header families, every reset format,
// retry-after, what a response without them does, and how later responses fold in.

import t from 'tap';
import { ReportedQuotaStore, durationMs, parseReportedLimits, usedRatio } from '../../src/accounting/reported-quota.js';

const NOW = Date.UTC(2026, 10, 26, 8, 0, 0);

t.test('OpenAI durations', async (t) => {
  t.equal(durationMs('12ms'), 12);
  t.equal(durationMs('1s'), 1000);
  t.equal(durationMs('6m0s'), 360_000);
  t.equal(durationMs('1h2m3.5s'), 3_723_500);
  t.equal(durationMs('soon'), null);
  t.equal(durationMs(''), null);
});

t.test('the x-ratelimit-* family, a duration reset', async (t) => {
  const r = parseReportedLimits({ 'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '25', 'x-ratelimit-reset-tokens': '1m30s' }, NOW);
  t.same(r, { limits: { tokens: { limit: 100, remaining: 25, resetAt: NOW + 90_000 } }, retryUntil: null });
  t.equal(usedRatio(r!.limits.tokens!), 0.75);
});

t.test('the anthropic-ratelimit-* family, an RFC 3339 reset', async (t) => {
  const r = parseReportedLimits({
    'anthropic-ratelimit-output-tokens-limit': '16000', 'anthropic-ratelimit-output-tokens-remaining': '4000',
    'anthropic-ratelimit-output-tokens-reset': '2026-11-26T08:01:00Z',
  }, NOW);
  t.same(r?.limits.output_tokens, { limit: 16000, remaining: 4000, resetAt: NOW + 60_000 });
});

t.test('retry-after as seconds or an HTTP date; nothing reported is null; junk numbers are not read', async (t) => {
  t.same(parseReportedLimits({ 'retry-after': '30' }, NOW), { limits: {}, retryUntil: NOW + 30_000 });
  t.same(parseReportedLimits({ 'retry-after': 'Thu, 26 Nov 2026 08:02:00 GMT' }, NOW), { limits: {}, retryUntil: NOW + 120_000 });
  t.equal(parseReportedLimits({ 'content-type': 'application/json' }, NOW), null);
  t.equal(parseReportedLimits({ 'x-ratelimit-limit-tokens': 'lots', 'x-ratelimit-remaining-tokens': '-1' }, NOW), null);
});

t.test('the store: per connection, later responses fold in, a response without headers changes nothing', async (t) => {
  let now = NOW;
  const store = new ReportedQuotaStore({ now: () => now });
  const ev = (headers: Record<string, string>, status = 200) => ({ connectionId: 'p#k1', providerId: 'p', connection: 'k1', status, headers });
  store.observe(ev({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '9', 'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '50' }));
  now += 1000;
  store.observe(ev({ 'retry-after': '5' }, 429));
  now += 1000;
  store.observe(ev({}));
  const [r] = store.forProvider('p');
  t.match(r, { provider: 'p', connection: 'k1', source: 'headers', observedAt: NOW + 1000, retryUntil: NOW + 6000 });
  t.same(r!.limits.requests, { limit: 10, remaining: 9, resetAt: null }, 'kept from the earlier response');
  t.same(store.forProvider('other'), []);
  t.same(store.all((id) => id !== 'p'), [], 'a provider no longer configured is left out');
});
