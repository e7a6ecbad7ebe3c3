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

// V8's Date.parse reads almost anything as a date: `-5`, `+5`, `-1`, `1,5` were dates in 2001, so a Retry-After of
// `-5` was a wait of 0 (the device flow took its 429 as "poll again now", not slow_down). Only the HTTP-date forms of
// RFC 9110 §5.6.7 are dates now; anything else is no Retry-After.
t.test('Retry-After: the three HTTP-date forms, and nothing else read as a date', async (t) => {
  const now = Date.parse('2026-11-21T10:00:00Z');
  const said = (v: string) => retryAfterMs({ 'retry-after': v }, now);
  t.equal(said('Sat, 21 Nov 2026 10:00:30 GMT'), 30_000, 'IMF-fixdate');
  t.equal(said('Saturday, 21-Nov-26 10:00:30 GMT'), 30_000, 'rfc850-date');
  t.equal(said('Sat Nov 21 10:00:30 2026'), 30_000, 'asctime-date');
  t.equal(said('Tue Dec  1 10:00:00 2026'), 864_000_000, 'asctime-date, a one-digit day');
  t.equal(said('Sat, 21 Nov 2026 10:00:30 GMT  '), 30_000, 'spaces around it');
  t.equal(said('Saturday, 21-Nov-76 10:00:00 GMT'), Date.parse('2076-11-21T10:00:00Z') - now, 'a two-digit year 50 years ahead: that year');
  t.equal(said('Saturday, 21-Nov-77 10:00:00 GMT'), 0, 'one more than 50 years ahead: the past century (1977), a wait of 0');
  t.equal(said('Wed, 21 Oct 2015 07:28:00 GMT'), 0, 'a date passed: 0');
  t.equal(said('12 '), 12_000, 'seconds with a space after');
  // What servers and proxies send beside the exact IMF-fixdate (RFC 9110 §5.6.7 asks recipients to be robust): the
  // same date. Before, a one-digit day or +0000 made a 120 s wait the cooldown's initial 5 s.
  for (const v of ['Sat, 1 Dec 2026 10:00:30 GMT', 'Sat,  21 Nov 2026 10:00:30 GMT', 'Sat, 21 Nov 2026 10:00:30 +0000', 'Sat, 21 Nov 2026 10:00:30 UTC',
    'Sat 21 Nov 2026 10:00:30 GMT', '21 Nov 2026 10:00:30 GMT', 'Sat, 21 Nov 2026 10:00:30', 'sat, 21 nov 2026 10:00:30 gmt', 'Sat, 21 Nov 2026 11:00:30 +0100',
    'Sat, 21 Nov 2026 23:59:30 +1359', 'Sat, 21 Nov 2026 00:00:30 -1000']) {
    const want = v.includes('Dec') ? Date.parse('2026-12-01T10:00:30Z') - now : 30_000;
    t.equal(said(v), want, `${JSON.stringify(v)}: the date it says`);
  }
  for (const v of ['-5', '+5', '-1', '1,5', '5s', 'garbage', '2026-11-21T10:00:30Z', 'Sat, 31 Feb 2026 10:00:00 GMT', 'Sat, 21 Nov 2026 24:00:00 GMT', 'Nov 2026 10:00:30 GMT', 'Sat, 21 Nov 26 10:00:30 GMT',
    'Sat, 21 Nov 2026 10:00:30 +9999', 'Sat, 21 Nov 2026 10:00:30 -9959', 'Sat, 21 Nov 2026 10:00:30 -0099', 'Sat, 21 Nov 2026 10:00:30 +2400']) {
    t.equal(said(v), null, `${JSON.stringify(v)}: no Retry-After`);
  }
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
