// Cooldowns: exponential and bounded, at least the upstream's Retry-After, the longest for an exhausted quota,
// cleared by a success; Retry-After parsed as seconds, an HTTP date or retry-after-ms. Failures classified for routing.

import t from 'tap';
import { Cooldowns, retryAfterMs } from '../../src/routing/cooldown.js';
import { errorFailure, httpFailure } from '../../src/routing/failures.js';
import { TollgateError } from '../../src/core/errors.js';

t.test('the wait doubles per consecutive failure up to max_s; a success clears it', async (t) => {
  let now = 1_000_000;
  const cool = new Cooldowns({ initial_s: 2, max_s: 10, multiplier: 2 }, () => now);
  t.same([1, 2, 3, 4, 5].map(() => cool.fail('p#k', { reason: '500' })), [2000, 4000, 8000, 10000, 10000], '2, 4, 8, then capped at 10 s');
  t.equal(cool.cooling('p#k')?.failures, 5);
  now += 10_001;
  t.equal(cool.cooling('p#k'), null, 'expired');
  t.equal(cool.fail('p#k', { reason: '500' }), 10000, 'an expired cooldown still remembers the streak');
  cool.succeed('p#k');
  t.equal(cool.cooling('p#k'), null);
  t.equal(cool.fail('p#k', { reason: '500' }), 2000, 'after a success the streak starts again');
});

t.test("a 429's Retry-After is the least wait; an exhausted quota waits max_s", async (t) => {
  const now = 5_000;
  const cool = new Cooldowns({ initial_s: 1, max_s: 300, multiplier: 3 }, () => now);
  t.equal(cool.fail('a#1', { reason: '429', retryAfterMs: 42_000 }), 42_000);
  t.equal(cool.remainingMs('a#1'), 42_000);
  t.equal(cool.fail('b#1', { reason: '429', retryAfterMs: 100 }), 1000, 'never less than the exponential wait');
  t.equal(cool.fail('c#1', { reason: '429', quotaExhausted: true }), 300_000);
  t.equal(cool.cooling('c#1')?.reason, 'quota_exhausted');
});

t.test('Retry-After: seconds, an HTTP date, retry-after-ms, nonsense', async (t) => {
  const now = Date.parse('2026-11-21T10:00:00Z');
  t.equal(retryAfterMs({ 'retry-after': '7' }, now), 7000);
  t.equal(retryAfterMs({ 'retry-after': '1.5' }, now), 1500);
  t.equal(retryAfterMs({ 'retry-after': 'Sat, 21 Nov 2026 10:00:30 GMT' }, now), 30_000);
  t.equal(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }, now), 250, 'the precise header wins');
  t.equal(retryAfterMs({ 'retry-after': 'soon' }, now), null);
  t.equal(retryAfterMs({}, now), null);
});

t.test('which failures move on to the next member and cool the connection', async (t) => {
  const cases: [number, string, boolean, boolean][] = [
    [500, '{}', true, false], [503, '{}', true, false], [408, '{}', true, false], [429, '{"error":{"type":"rate_limit_exceeded"}}', true, false],
    [429, '{"error":{"code":"insufficient_quota"}}', true, true], [402, '{}', true, true], [401, '{}', true, false], [403, '{}', true, false],
    [400, '{}', false, false], [404, '{}', false, false], [422, '{}', false, false],
  ];
  for (const [status, body, retry, exhausted] of cases) {
    const f = httpFailure(status, { 'retry-after': '3' }, body);
    t.same([f.retryable, f.cool, f.quotaExhausted], [retry, retry, exhausted], `${status} ${body}`);
    t.equal(f.retryAfterMs, 3000);
  }
  t.same(errorFailure(new TollgateError('TOLLGATE_ERR_UPSTREAM_TIMEOUT', 'x')).retryable, true);
  t.same(errorFailure(new TollgateError('TOLLGATE_ERR_PROVIDER_AUTH', 'x')).retryable, true, 'a provider that is not connected');
  t.same(errorFailure(new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'x')).retryable, false);
});
