// A regression test from a review of OAuth connections: a device authorization answer with `"interval": 0` made
// `tollgate connect` poll the token endpoint in a tight loop (seconds() accepted 0 and the wait was interval x 1000
// ms); a negative one was refused. RFC 8628 §3.2: the interval is the minimum wait between polls, 5 s when the
// server gives none. Now a missing or non-positive interval is 5 s and any interval is at least 1 s. The waits go
// through an injected sleep that records them and moves an injected clock, so nothing waits the real intervals; the
// fake counts the polls it saw.
import t from 'tap';
import { startFakeOAuth } from '../helpers/fake-oauth.js';
import { pollForToken, startDeviceAuthorization } from '../../src/providers/device-code.js';

function fakeClock() {
  let now = 1_800_000_000_000;
  const waits: number[] = [];
  return { waits, now: () => now, sleep: async (ms: number) => void (waits.push(ms), (now += ms)) };
}

for (const [sent, taken] of [[0, 5], [-3, 5], [0.2, 1], [2.5, 2.5]] as const) {
  t.test(`"interval": ${sent} from the server: ${taken} s between polls`, async (t) => {
    const fake = await startFakeOAuth(t, { interval: sent, pendingPolls: 3 });
    const da = await startDeviceAuthorization(fake.settings());
    t.equal(da.interval, taken);
    const clock = fakeClock();
    await pollForToken(fake.settings(), da, clock);
    t.equal(fake.requests.token, 4, 'three pending polls and the one that got the tokens');
    t.same(clock.waits, [taken * 1000, taken * 1000, taken * 1000, taken * 1000], 'each poll after the interval');
  });
}

t.test('a DeviceAuthorization with interval 0 given to pollForToken: 5 s too', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 1 });
  const da = await startDeviceAuthorization(fake.settings());
  const clock = fakeClock();
  await pollForToken(fake.settings(), { ...da, interval: 0 }, clock);
  t.equal(fake.requests.token, 2);
  t.same(clock.waits, [5000, 5000]);
});

// From the review of that fix: an interval of days (or one past setTimeout's limit, where Node waits 1 ms) polled
// hundreds of times a second, and an interval longer than the code's life slept past its expiry. Each wait is now
// at most what is left of the code's life (and setTimeout's limit): the flow ends at the expiry, without a poll.
for (const [interval, expiresIn] of [[3_000_000, 20], [28, 20]] as const) {
  t.test(`"interval": ${interval} with "expires_in": ${expiresIn}: no poll, the code's expiry said at ${expiresIn} s`, async (t) => {
    const fake = await startFakeOAuth(t, { interval, pendingPolls: 1_000 });
    const da = await startDeviceAuthorization(fake.settings());
    const clock = fakeClock();
    await t.rejects(pollForToken(fake.settings(), { ...da, expires_in: expiresIn }, clock), /expired after 20 s without being approved/);
    t.equal(fake.requests.token, 0, 'no poll: the interval outlives the code');
    t.same(clock.waits, [expiresIn * 1000], 'one wait, to the expiry');
  });
}

t.test('waits never exceed setTimeout\'s limit, however long the code lives', async (t) => {
  const fake = await startFakeOAuth(t, { interval: 1e10, pendingPolls: 2 });
  const da = await startDeviceAuthorization(fake.settings());
  const clock = fakeClock();
  await pollForToken(fake.settings(), { ...da, expires_in: 1e11 }, clock);
  t.equal(fake.requests.token, 3, 'two pending polls and the one that got the tokens');
  t.same(clock.waits, [2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1], 'each wait at setTimeout\'s limit (past it Node waits 1 ms)');
});

// A 429 from the token endpoint ended the flow (its text body was "not a JSON object", its JSON one "refused the
// device code"). Now it is never the end: with a Retry-After (seconds or an HTTP date) the next poll waits for it, at
// least the interval and at most what is left of the code's life and setTimeout's limit; without one it is slow_down
// (RFC 8628 §3.5: 5 s more for this and every later poll).
const HUGE = 2 ** 31 - 1;
const cases: [string, { interval: number; retryAfter: string | null; json?: string; expiresIn?: number }, number[]][] = [
  ['no Retry-After, a text body: 5 s more, for every later poll too', { interval: 1, retryAfter: null }, [1000, 1000, 6000, 6000]],
  ['no Retry-After, a slow_down body: 5 s more', { interval: 1, retryAfter: null, json: 'slow_down' }, [1000, 1000, 6000, 6000]],
  ['Retry-After: 30 (seconds), an OAuth error body: 30 s once', { interval: 1, retryAfter: '30', json: 'rate_limit_exceeded' }, [1000, 1000, 30_000, 1000]],
  ['Retry-After an HTTP date passed: the interval', { interval: 1, retryAfter: 'Wed, 21 Oct 2015 07:28:00 GMT' }, [1000, 1000, 1000, 1000]],
  ['Retry-After an HTTP date in 2100: setTimeout\'s limit', { interval: 1, retryAfter: 'Fri, 01 Jan 2100 00:00:00 GMT', expiresIn: 1e11 }, [1000, 1000, HUGE, 1000]],
  ['Retry-After shorter than the interval: the interval', { interval: 10, retryAfter: '2' }, [10_000, 10_000, 10_000, 10_000]],
  ['Retry-After an rfc850 date passed: the interval', { interval: 1, retryAfter: 'Sunday, 06-Nov-94 08:49:37 GMT' }, [1000, 1000, 1000, 1000]],
  ['Retry-After an asctime date passed: the interval', { interval: 1, retryAfter: 'Sun Nov  6 08:49:37 1994' }, [1000, 1000, 1000, 1000]],
  // neither seconds nor an HTTP date (V8's Date.parse read these as dates in 2001: a wait of 0, the interval kept)
  ...['-5', '+5', '-1', '1,5', 'garbage'].map((retryAfter): (typeof cases)[number] => [
    `Retry-After ${JSON.stringify(retryAfter)}: none, so slow_down`, { interval: 1, retryAfter }, [1000, 1000, 6000, 6000],
  ]),
];
for (const [label, o, waits] of cases) {
  t.test(`a 429 from the token endpoint, ${label}; the flow goes on to the tokens`, async (t) => {
    const fake = await startFakeOAuth(t, {
      interval: o.interval, pendingPolls: 3, rateLimited: { 2: { retryAfter: o.retryAfter, ...(o.json === undefined ? {} : { json: o.json }) } },
    });
    const da = await startDeviceAuthorization(fake.settings());
    const clock = fakeClock();
    const tokens = await pollForToken(fake.settings(), o.expiresIn === undefined ? da : { ...da, expires_in: o.expiresIn }, clock);
    t.same(fake.grants.map((g) => g.answer), ['authorization_pending', '429', 'authorization_pending', 'issued']);
    t.equal(tokens.access_token, fake.issuedAccessTokens()[0]);
    t.same(clock.waits, waits);
  });
}

t.test('a 429 whose Retry-After outlives the code: one wait, to the expiry, then the expiry said', async (t) => {
  const fake = await startFakeOAuth(t, { interval: 1, deviceExpiresIn: 600, pendingPolls: 3, rateLimited: { 1: { retryAfter: '900' } } });
  const da = await startDeviceAuthorization(fake.settings());
  const clock = fakeClock();
  await t.rejects(pollForToken(fake.settings(), da, clock), /expired after 600 s without being approved/);
  t.same(fake.grants.map((g) => g.answer), ['429']);
  t.same(clock.waits, [1000, 599_000], 'the interval, then what was left of the code\'s life');
});
