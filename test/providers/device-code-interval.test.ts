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
