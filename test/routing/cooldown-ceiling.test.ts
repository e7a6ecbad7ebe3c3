// An upstream's Retry-After cannot take a connection out past max_s (docs/routing.md, Cooldowns): a huge or far-dated
// value is honoured up to max_s, one that is not a finite number is ignored, and every cooldown's end stays an instant
// a Date can hold.

import t from 'tap';
import { Cooldowns, retryAfterMs } from '../../src/routing/cooldown.js';
import { httpFailure } from '../../src/routing/failures.js';

const NOW = Date.parse('2026-11-21T10:00:00Z');
const CFG = { initial_s: 5, max_s: 300, multiplier: 2 };

t.test('Retry-After that is not a finite number is not a wait', async (t) => {
  t.equal(retryAfterMs({ 'retry-after': '9'.repeat(400) }, NOW), null, '400 digits read as Infinity');
  t.equal(retryAfterMs({ 'retry-after-ms': '1e400' }, NOW), null, 'retry-after-ms Infinity, nothing else said');
  t.equal(retryAfterMs({ 'retry-after-ms': '1e400', 'retry-after': '7' }, NOW), 7000, 'the plain header is read instead');
  t.equal(retryAfterMs({ 'retry-after': '99999999999' }, NOW), 99_999_999_999_000, 'a huge finite wait is parsed as said; the cooldown bounds it');
  t.equal(httpFailure(429, { 'retry-after': '9'.repeat(400) }, '{}').retryAfterMs, null, 'the failure carries no wait');
});

t.test('a Retry-After raises the cooldown up to max_s and no further', async (t) => {
  const cool = new Cooldowns(CFG, () => NOW);
  const said = {
    seconds: retryAfterMs({ 'retry-after': '99999999999' }, NOW),
    thirteen: retryAfterMs({ 'retry-after': '9000000000000' }, NOW),
    date2099: retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2099 07:28:00 GMT' }, NOW),
    ms: retryAfterMs({ 'retry-after-ms': '1e300' }, NOW),
  };
  for (const [name, ms] of Object.entries(said)) {
    t.ok(ms !== null && ms > 300_000, `${name}: parsed as longer than max_s`);
    t.equal(cool.fail(`${name}#k`, { reason: '429', retryAfterMs: ms }), 300_000, `${name}: waits max_s`);
    t.equal(cool.remainingMs(`${name}#k`), 300_000);
    t.equal(new Date(cool.cooling(`${name}#k`)!.until).toISOString(), '2026-11-21T10:05:00.000Z', `${name}: ends max_s from now`);
  }
  t.equal(cool.fail('fine#k', { reason: '429', retryAfterMs: 42_000 }), 42_000, 'a wait within max_s is honoured as said');
});

t.test('a wait that is not finite is ignored: the exponential wait applies', async (t) => {
  const cool = new Cooldowns(CFG, () => NOW);
  t.equal(cool.fail('inf#k', { reason: '429', retryAfterMs: Infinity }), 5000);
  t.equal(cool.fail('nan#k', { reason: '429', retryAfterMs: NaN }), 5000);
  t.equal(cool.cooling('inf#k')!.until, NOW + 5000);
  t.equal(cool.cooling('nan#k')!.until, NOW + 5000, 'a NaN wait does not make the end NaN');
});

t.test('a cooldown started under a larger max_s ends within the new max_s at the next failure', async (t) => {
  let now = NOW;
  const cool = new Cooldowns({ ...CFG, max_s: 3600 }, () => now);
  t.equal(cool.fail('p#k', { reason: '429', retryAfterMs: 3_600_000 }), 3_600_000);
  cool.configure(CFG);
  now += 1000;
  cool.fail('p#k', { reason: '500' });
  t.equal(cool.remainingMs('p#k'), 300_000, 'the running hour is cut to max_s from the latest failure');
  t.equal(cool.cooling('p#k')!.failures, 2, 'the streak is kept');
});

t.test('a cooldown setting past a day is refused by the config', async (t) => {
  const { parseConfig, ConfigError } = await import('../../src/config/load.js');
  const cfg = (max_s: number) => parseConfig({ providers: {}, routing: { cooldown: { max_s } } }, {});
  t.doesNotThrow(() => cfg(86_400));
  t.throws(() => cfg(1e300), ConfigError, 'max_s 1e300 would cool a provider for ever');
});
