// Alert delivery (issue 6, item 4): the email channel against a real SMTP server (smtp-server on a loopback
// port), the webhook channel against a real HTTP receiver that verifies the signature, and the notifier's
// queues, retries with backoff, per-channel independence, test sends and shutdown. Assertions are on what the
// servers received and on the results reported through `onResult`.

import t from 'tap';
import { emailChannel } from '../../src/alerts/channels/email.js';
import { signPayload, verifySignature, webhookChannel, webhookPayload } from '../../src/alerts/channels/webhook.js';
import { Notifier, type NotifierOptions } from '../../src/alerts/notifier.js';
import type { Alert, Channel, DeliveryResult } from '../../src/alerts/types.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import { receiver as receiverWith, silentServer, smtpServer } from '../helpers/receivers.js';

/** What the helpers need of a test: somewhere to register cleanup. */
type T = { teardown(fn: () => unknown): void };

const SECRET = 'whsec_test_0123456789';

function alert(over: Partial<Alert> = {}): Alert {
  const firedAt = Date.UTC(2024, 4, 15, 12, 30);
  return {
    id: uuidv7(firedAt),
    kind: 'quota_warning',
    severity: 'warning',
    subject: 'openai',
    threshold: 80,
    window: '2024-05-16T00:00:00.000Z',
    title: 'openai quota at 80%',
    message: 'openai has used 80% of its daily quota (800 of 1000 requests); 200 remain, resetting in 11 h 30 min.',
    data: { used_pct: 80, used: 800, limit: 1000, remaining: 200, resets_at: '2024-05-16T00:00:00.000Z', cost: null },
    firedAt,
    ...over,
  };
}

const receiver = (t: T, answer?: (n: number) => number, delayMs?: number) => receiverWith(t, SECRET, answer, delayMs);

/** A notifier whose results land in `results`; closed at teardown. */
function notifier(t: T, channels: Channel[], opts: NotifierOptions = {}): { n: Notifier; results: [Alert, DeliveryResult][] } {
  const results: [Alert, DeliveryResult][] = [];
  const n = new Notifier(channels, { backoffMs: 10, onResult: (a, r) => void results.push([a, r]), ...opts });
  t.teardown(() => n.close());
  return { n, results };
}

// ---- email ----------------------------------------------------------------------------------------------------

t.test('email: delivered over SMTP with the credentials of the URL, subject, recipients and facts', async (t) => {
  const smtp = await smtpServer(t, { user: 'alerts', pass: 's3cret pw' });
  const email = emailChannel({
    smtp_url: `smtp://alerts:s3cret%20pw@127.0.0.1:${smtp.port}`,
    from: 'Tollgate <tollgate@example.com>',
    to: ['ops@example.com', 'oncall@example.com'],
  });
  const { n, results } = notifier(t, [email]);
  const a = alert();
  n.notify(a);
  await n.drain();

  t.same(results.map(([x, r]) => [x.id, r]), [[a.id, { channel: 'email', delivered: true, attempts: 1, error: '' }]]);
  t.equal(smtp.mails.length, 1);
  const m = smtp.mails[0]!;
  t.equal(m.user, 'alerts', 'authenticated with the user of smtp_url');
  t.equal(m.from, 'tollgate@example.com');
  t.same(m.rcpt, ['ops@example.com', 'oncall@example.com']);
  t.equal(m.headers['from'], 'Tollgate <tollgate@example.com>');
  t.equal(m.headers['to'], 'ops@example.com, oncall@example.com');
  t.equal(m.headers['subject'], '[Tollgate] openai quota at 80%');
  t.equal(m.headers['x-tollgate-event'], 'quota_warning');
  t.equal(m.headers['x-tollgate-delivery'], a.id);
  t.ok(m.body.startsWith(`${a.message}\n\n`), 'the notification text comes first');
  t.match(m.body, /^kind: +quota_warning$/m);
  t.match(m.body, /^threshold: +80%$/m);
  t.match(m.body, /^remaining: +200$/m);
  t.match(m.body, /^resets_at: +2024-05-16T00:00:00.000Z$/m);
  t.match(m.body, /^cost: +not reported$/m);
  t.match(m.body, /^fired at: +2024-05-15T12:30:00.000Z$/m);
  t.match(m.body, new RegExp(`^alert id: +${a.id}$`, 'm'));
});

t.test('email: an SMTP server that is down fails after the retries, without the credentials in the error', async (t) => {
  const port = await freePort();
  const email = emailChannel({ smtp_url: `smtps://mailer-user:hunter2-very-secret@127.0.0.1:${port}`, from: 'a@example.com', to: ['b@example.com'] });
  const { n, results } = notifier(t, [email], { retries: 1 });
  n.notify(alert());
  await n.drain();

  t.equal(results.length, 1);
  const r = results[0]![1];
  t.equal(r.delivered, false);
  t.equal(r.attempts, 2);
  t.match(r.error, /^smtp 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
  t.notMatch(r.error, /hunter2|mailer-user|smtps:\/\//);
});

t.test('email: a server that never greets fails the attempt at the timeout and never delays the webhook', async (t) => {
  const port = await silentServer(t);
  const hook = await receiver(t);
  const email = emailChannel({ smtp_url: `smtp://127.0.0.1:${port}`, from: 'a@example.com', to: ['b@example.com'] }, { timeoutMs: 1500 });
  const { n, results } = notifier(t, [email, webhookChannel({ url: hook.url, secret: SECRET })], { retries: 0 });
  const started = Date.now();
  n.notify(alert());
  await waitFor(() => results.length === 1, 1000);
  t.same(results[0]![1], { channel: 'webhook', delivered: true, attempts: 1, error: '' }, 'the webhook went first');
  await n.drain();
  t.equal(results.length, 2);
  const r = results[1]![1];
  t.equal(r.channel, 'email');
  t.equal(r.delivered, false);
  t.match(r.error, /^smtp 127\.0\.0\.1:\d+: ETIMEDOUT Greeting never received/);
  t.ok(Date.now() - started >= 1400, 'the email attempt waited for its timeout');
});

// ---- webhook --------------------------------------------------------------------------------------------------

t.test('webhook: JSON body, headers and a valid signature', async (t) => {
  const hook = await receiver(t);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })]);
  const a = alert({ kind: 'daily_budget', severity: 'critical', subject: 'daily', threshold: 100, title: 'Daily budget exhausted' });
  const before = Math.floor(Date.now() / 1000);
  n.notify(a);
  await n.drain();

  t.same(results.map(([, r]) => r), [{ channel: 'webhook', delivered: true, attempts: 1, error: '' }]);
  t.equal(hook.got.length, 1);
  const got = hook.got[0]!;
  t.ok(got.signed, 'verifySignature accepts the delivery');
  t.same(JSON.parse(got.body), {
    id: a.id, kind: 'daily_budget', severity: 'critical', subject: 'daily', threshold: 100, window: a.window,
    title: 'Daily budget exhausted', message: a.message, data: a.data, fired_at: '2024-05-15T12:30:00.000Z',
  });
  t.same(JSON.parse(got.body), webhookPayload(a));
  t.equal(got.headers['content-type'], 'application/json');
  t.equal(got.headers['user-agent'], 'tollgate');
  t.equal(got.headers['x-tollgate-event'], 'daily_budget');
  t.equal(got.headers['x-tollgate-delivery'], a.id);
  const ts = Number(got.headers['x-tollgate-timestamp']);
  t.ok(ts >= before && ts <= before + 5, 'timestamp in unix seconds');
  t.equal(got.headers['x-tollgate-signature'], signPayload(SECRET, ts, got.body));
  t.match(got.headers['x-tollgate-signature'], /^sha256=[0-9a-f]{64}$/);
});

t.test('webhook: verifySignature rejects a wrong secret, a tampered body, a stale timestamp and a missing header', async (t) => {
  const body = '{"id":"x"}';
  const ts = 1_700_000_000;
  const now = ts * 1000;
  const sig = signPayload(SECRET, ts, body);
  t.ok(verifySignature(SECRET, String(ts), body, sig, 300, now));
  t.ok(verifySignature(SECRET, ts, Buffer.from(body), sig, 300, now + 299_000), 'within the tolerance; bytes accepted');
  t.notOk(verifySignature('another-secret', String(ts), body, sig, 300, now));
  t.notOk(verifySignature(SECRET, String(ts), '{"id":"y"}', sig, 300, now));
  t.notOk(verifySignature(SECRET, String(ts + 1), body, sig, 300, now), 'the timestamp is signed');
  t.notOk(verifySignature(SECRET, String(ts), body, sig, 300, now + 301_000), 'a replay after the tolerance');
  t.notOk(verifySignature(SECRET, undefined, body, sig, 300, now));
  t.notOk(verifySignature(SECRET, String(ts), body, undefined, 300, now));
  t.notOk(verifySignature(SECRET, 'abc', body, sig, 300, now));
  t.notOk(verifySignature(SECRET, String(ts), body, sig.slice(0, -1), 300, now));
});

t.test('webhook: a receiver holding another secret refuses the delivery, which is reported failed', async (t) => {
  const hook = await receiver(t);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: 'not-the-receivers-secret' })], { retries: 0 });
  n.notify(alert());
  await n.drain();
  t.equal(hook.got.length, 1);
  t.equal(hook.got[0]!.signed, false);
  t.same(results.map(([, r]) => r), [{ channel: 'webhook', delivered: false, attempts: 1, error: 'webhook: HTTP 401 bad signature' }]);
});

t.test('webhook: 500 twice then 200 is delivered on the third attempt, reported once', async (t) => {
  const hook = await receiver(t, (i) => (i <= 2 ? 500 : 200));
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })], { retries: 3, backoffMs: 20 });
  const a = alert();
  const started = Date.now();
  n.notify(a);
  await n.drain();
  t.same(results.map(([x, r]) => [x.id, r]), [[a.id, { channel: 'webhook', delivered: true, attempts: 3, error: '' }]]);
  t.ok(Date.now() - started >= 60, 'waited 20 ms, then 40 ms (doubling)');
  t.equal(hook.got.length, 3);
  t.same(new Set(hook.got.map((g) => g.headers['x-tollgate-delivery'])), new Set([a.id]), 'every attempt carries the alert id');
  t.ok(hook.got.every((g) => g.signed));
});

t.test('webhook: a receiver that always fails is reported after retries + 1 attempts, with the status', async (t) => {
  const hook = await receiver(t, () => 503);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })], { retries: 2, backoffMs: 10 });
  n.notify(alert());
  await n.drain();
  t.equal(hook.got.length, 3);
  t.equal(results.length, 1);
  t.same(results[0]![1], { channel: 'webhook', delivered: false, attempts: 3, error: 'webhook: HTTP 503 failing on purpose (503) at ***' });
});

t.test('webhook: an unreachable receiver and a slow one fail without the URL in the error', async (t) => {
  const port = await freePort();
  const slow = await receiver(t, () => 200, 1000);
  const { n, results } = notifier(
    t,
    [
      webhookChannel({ url: `http://127.0.0.1:${port}/hook?token=topsecret` }),
      webhookChannel({ url: slow.url, secret: SECRET }, { timeoutMs: 200 }),
    ],
    { retries: 0 },
  );
  n.notify(alert());
  await n.drain();
  const [down, late] = results.map(([, r]) => r).sort((x, y) => (x.error < y.error ? -1 : 1));
  t.match(down, { delivered: false, attempts: 1 });
  t.match(late, { delivered: false, attempts: 1 });
  const errors = [down!.error, late!.error];
  t.ok(errors.some((e) => /ECONNREFUSED/.test(e)), 'connection refused reported');
  t.ok(errors.includes('webhook: no answer within 200 ms'), 'deadline reported');
  for (const e of errors) t.notMatch(e, /topsecret|token|\/hook/);
});

// ---- the notifier ---------------------------------------------------------------------------------------------

t.test('notify returns at once while the receiver takes 2 s', async (t) => {
  const hook = await receiver(t, () => 200, 2000);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })]);
  const started = performance.now();
  n.notify(alert());
  const took = performance.now() - started;
  t.ok(took < 50, `notify took ${took.toFixed(1)} ms`);
  t.equal(results.length, 0);
  t.same(n.pending, { webhook: 1 });
  await n.drain();
  t.ok(performance.now() - started >= 1900, 'the delivery itself took the receiver\'s 2 s');
  t.same(results.map(([, r]) => r), [{ channel: 'webhook', delivered: true, attempts: 1, error: '' }]);
  t.same(n.pending, { webhook: 0 });
});

t.test('a full queue refuses at once with queue_full', async (t) => {
  const hook = await receiver(t, () => 200, 300);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })], { queueMax: 2 });
  const [a1, a2, a3] = [alert(), alert(), alert()];
  n.notify(a1);
  n.notify(a2);
  n.notify(a3);
  t.same(results.map(([x, r]) => [x.id, r]), [[a3.id, { channel: 'webhook', delivered: false, attempts: 0, error: 'queue_full' }]]);
  await n.drain();
  t.same(results.map(([x, r]) => [x.id, r.delivered]), [[a3.id, false], [a1.id, true], [a2.id, true]]);
});

t.test('test() sends to every channel now and reports per channel; onResult is not called', async (t) => {
  const smtp = await smtpServer(t);
  const hook = await receiver(t, () => 500);
  const { n, results } = notifier(
    t,
    [
      emailChannel({ smtp_url: `smtp://127.0.0.1:${smtp.port}`, from: 'a@example.com', to: ['b@example.com'] }),
      webhookChannel({ url: hook.url, secret: SECRET }),
    ],
    { retries: 2, backoffMs: 60_000, testBackoffMs: 10 },
  );
  const a = alert({ kind: 'test', severity: 'info', subject: 'test', threshold: null, title: 'Test notification', message: 'It works.', data: {} });
  const got = await n.test(a);
  t.same(got, [
    { channel: 'email', delivered: true, attempts: 1, error: '' },
    { channel: 'webhook', delivered: false, attempts: 3, error: 'webhook: HTTP 500 failing on purpose (500) at ***' },
  ]);
  t.equal(smtp.mails.length, 1);
  t.equal(smtp.mails[0]!.headers['subject'], '[Tollgate] Test notification');
  t.equal(hook.got.length, 3);
  t.equal(results.length, 0);
});

t.test('close() drains the queues, then refuses new alerts as shutdown', async (t) => {
  const hook = await receiver(t, () => 200, 100);
  let closed = 0;
  const webhook = webhookChannel({ url: hook.url, secret: SECRET });
  const counted: Channel = { name: 'webhook', send: (a) => webhook.send(a), close: async () => void (closed++, await webhook.close?.()) };
  const { n, results } = notifier(t, [counted]);
  for (let i = 0; i < 3; i++) n.notify(alert());
  await n.close();
  t.same(results.map(([, r]) => r.delivered), [true, true, true]);
  t.equal(hook.got.length, 3);
  t.equal(closed, 1, 'the channel is closed once');
  n.notify(alert());
  t.same(results[3]![1], { channel: 'webhook', delivered: false, attempts: 0, error: 'shutdown' });
  t.same(await n.test(alert()), [{ channel: 'webhook', delivered: false, attempts: 0, error: 'shutdown' }]);
});

t.test('close() is bounded: what is left when time is up is reported as shutdown, once each', async (t) => {
  const hook = await receiver(t, () => 200, 1000);
  const { n, results } = notifier(t, [webhookChannel({ url: hook.url, secret: SECRET })], { closeTimeoutMs: 150 });
  const alerts = [alert(), alert(), alert()];
  for (const a of alerts) n.notify(a);
  const started = Date.now();
  await n.close();
  t.ok(Date.now() - started < 1000, 'close did not wait for the slow receiver');
  t.equal(results.length, 3);
  t.same(new Set(results.map(([x]) => x.id)), new Set(alerts.map((a) => a.id)));
  t.ok(results.every(([, r]) => !r.delivered && r.error.startsWith('shutdown')));
  const inflight = results.find(([x]) => x.id === alerts[0]!.id)![1];
  t.same(inflight, { channel: 'webhook', delivered: false, attempts: 1, error: 'shutdown: send in flight, outcome unknown' });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(results.length, 3, 'the late outcome of the send in flight is not reported twice');
});

t.test('a throwing onResult hook or channel never escapes notify', async (t) => {
  const warnings: string[] = [];
  const broken: Channel = { name: 'webhook', send: () => Promise.reject(new Error('boom')) };
  const n = new Notifier([broken], {
    retries: 0,
    onResult: () => {
      throw new Error('hook failed');
    },
    log: { warn: (_o, msg) => void warnings.push(msg) },
  });
  t.teardown(() => n.close());
  t.doesNotThrow(() => n.notify(alert()));
  await n.drain();
  t.same(warnings, ['alert delivery failed', 'alert onResult hook threw']);
});

// A receiver that echoes the hook's token in another form than the URL's (the path JSON-escaped with `\/`, as PHP
// writes it; the query's value alone; percent-decoded): each was quoted in the recorded error, which the alert list
// shows every key and the log keeps. Now each path segment and query value is cut out in every such form.
t.test('webhook: the path and query never reach the recorded error, however the answer echoes them', async (t) => {
  const { listenLoopback } = await import('../helpers/loopback.js');
  const hook = await listenLoopback(t, async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      error: `unknown hook ${url.pathname}`, detail: `invalid token ${url.searchParams.get('token')}`,
      decoded: decodeURIComponent(url.pathname), bare: url.pathname.split('/').at(-1),
    }).replaceAll('/', '\\/'));
  }, (_err, res) => res.writeHead(500).end());
  const url = `http://127.0.0.1:${hook.port}/hooks/T0001/B0002/XSECRET%20PATHTOKEN?token=QSECRETVALUE`;
  const { n, results } = notifier(t, [webhookChannel({ url })], { retries: 0, backoffMs: 10 });
  n.notify(alert());
  await n.drain();
  const error = results[0]![1].error;
  t.match(error, /^webhook: HTTP 401 /);
  for (const secret of ['XSECRET', 'PATHTOKEN', 'QSECRETVALUE', 'T0001\\/B0002']) t.notMatch(error, secret, `${secret} is not in: ${error}`);
  t.match(error, /\[REDACTED\]/, 'where they stood is marked');

  // A value with `+` (base64 tokens), and a token that is the bare query: echoed as they are in the URL.
  for (const [query, token] of [['token=Zx9+Qk2v/Lm8+Tr4Wp7Y=', 'Zx9+Qk2v/Lm8+Tr4Wp7Y='], ['Zx9xQk2vLm8xTr4Wp7Y', 'Zx9xQk2vLm8xTr4Wp7Y']] as const) {
    const echo = await listenLoopback(t, async (req, res) => {
      res.writeHead(401).end(`unknown token ${req.url!.split('?')[1]!.replace(/^token=/, '')}`);
    }, (_err, res) => res.writeHead(500).end());
    const { n: n2, results: r2 } = notifier(t, [webhookChannel({ url: `http://127.0.0.1:${echo.port}/hook?${query}` })], { retries: 0, backoffMs: 10 });
    n2.notify(alert());
    await n2.drain();
    t.equal(r2[0]![1].error, 'webhook: HTTP 401 unknown token [REDACTED]', `?${query}: the token cut out`);
    t.notMatch(r2[0]![1].error, token);
  }

  // A parameter's name is no secret: an answer that names it keeps it (only the values are cut out).
  const named = await listenLoopback(t, async (_req, res) => {
    res.writeHead(401).end('the signature parameter is expired (Zx81kQmP0aa9); renew the access_token Q1w2e3r4t5y6');
  }, (_err, res) => res.writeHead(500).end());
  const { n: n3, results: r3 } = notifier(t, [webhookChannel({ url: `http://127.0.0.1:${named.port}/hook?signature=Zx81kQmP0aa9&access_token=Q1w2e3r4t5y6` })], { retries: 0, backoffMs: 10 });
  n3.notify(alert());
  await n3.drain();
  t.equal(r3[0]![1].error, 'webhook: HTTP 401 the signature parameter is expired ([REDACTED]); renew the access_token [REDACTED]');
});

// A webhook URL's user and password were dropped (undici sends none from a URL): a receiver behind Basic
// authentication refused every delivery, and nothing said why. They are sent as Basic authentication now, and kept
// out of the recorded error of a receiver that echoes its request's headers.
t.test('webhook: the URL\'s user and password sent as Basic authentication, and not recorded', async (t) => {
  const hook = await receiver(t, (n) => (n === 1 ? 204 : 500));
  const u = new URL(hook.url);
  const withAuth = `http://hook%40user:pa%3Ass%20w0rd@${u.host}${u.pathname}${u.search}`;
  const { n, results } = notifier(t, [webhookChannel({ url: withAuth, secret: SECRET })], { retries: 0 });
  n.notify(alert());
  await n.drain();
  t.equal(hook.got[0]?.headers.authorization, `Basic ${Buffer.from('hook@user:pa:ss w0rd').toString('base64')}`, 'decoded, as curl sends them');
  t.equal(results[0]?.[1].delivered, true);
  const echoing = await listenEcho(t);
  const { n: n2, results: r2 } = notifier(t, [webhookChannel({ url: `http://hook:Pw-0123456789@127.0.0.1:${echoing}/h`, secret: SECRET })], { retries: 0 });
  n2.notify(alert());
  await n2.drain();
  const error = r2[0]?.[1].error ?? '';
  t.match(error, /HTTP 500/);
  t.notMatch(error, /Pw-0123456789/, 'the password not in the recorded error');
  t.notMatch(error, new RegExp(Buffer.from('hook:Pw-0123456789').toString('base64')), 'nor the header that carries it');
});

/** A receiver that answers 500 with the Authorization header it got and the credentials decoded. */
async function listenEcho(t: T): Promise<number> {
  const { listenLoopback } = await import('../helpers/loopback.js');
  const lb = await listenLoopback(t, async (req, res) => {
    for await (const _ of req);
    const auth = String(req.headers.authorization ?? '');
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`denied: ${auth} = ${Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString()}`);
  }, (_e, res) => res.writeHead(500).end());
  return lb.port;
}

t.test('webhook: a token as the URL\'s user alone is sent as Basic authentication and kept out of the recorded error', async (t) => {
  const echoing = await listenEcho(t);
  const { n, results } = notifier(t, [webhookChannel({ url: `http://whk_live_SECRETTOKEN123456@127.0.0.1:${echoing}/h`, secret: SECRET })], { retries: 0 });
  n.notify(alert());
  await n.drain();
  const error = results[0]?.[1].error ?? '';
  t.match(error, /HTTP 500 denied: Basic /, 'sent');
  t.notMatch(error, /SECRETTOKEN/, 'the token not in the recorded error');
});

t.test('webhook: a short password in the URL is kept out of the recorded error too', async (t) => {
  const echoing = await listenEcho(t);
  const { n, results } = notifier(t, [webhookChannel({ url: `http://ops:hunter2@127.0.0.1:${echoing}/h`, secret: SECRET })], { retries: 0 });
  n.notify(alert());
  await n.drain();
  const error = results[0]?.[1].error ?? '';
  t.match(error, /HTTP 500 denied/);
  t.notMatch(error, /hunter2/, 'a 7-character password: scrubbed (the shared redaction leaves strings under 8 alone)');
});

// A 1- or 2-character password was passed over (cut out alone from 3 characters: shorter, it would take letters out
// of every word): a receiver that echoed the credentials it got, or quoted the URL, put it in the recorded error (the
// alerts API, the log). It is cut out where the userinfo is written, at any length: the `user:pass` pair, `:pass@`,
// and any quoted URL's userinfo; the rest of the message stays whole.
t.test('webhook: a 1- or 2-character password is kept out of the recorded error, and the message stays readable', async (t) => {
  const { listenLoopback } = await import('../helpers/loopback.js');
  const lb = await listenLoopback(t, async (req, res) => {
    for await (const _ of req);
    const creds = Buffer.from(String(req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
    const quoted = `http://${creds.split(':').map(encodeURIComponent).join(':')}@127.0.0.1/`;
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`max retries exceeded for ${creds}; see ${quoted} or ${JSON.stringify({ url: quoted }).replaceAll('/', '\\/')}`);
  }, (_e, res) => res.writeHead(500).end());
  for (const [userinfo, password] of [['ops:x', 'x'], ['ops:q7', 'q7'], [':z9', 'z9'], ['o%3Ap:%7E', '~']] as const) {
    const { n, results } = notifier(t, [webhookChannel({ url: `http://${userinfo}@127.0.0.1:${lb.port}/h`, secret: SECRET })], { retries: 0 });
    n.notify(alert());
    await n.drain();
    const error = results[0]?.[1].error ?? '';
    const said = 'webhook: HTTP 500 max retries exceeded for ***; see http://***@127.0.0.1/ or {"url":"http:\\/\\/***@127.0.0.1\\/"}';
    t.equal(error, said, `${userinfo}: the words kept, the credentials out`);
    t.notOk([`:${password}`, `:${encodeURIComponent(password)}`].some((p) => error.includes(p)), `${userinfo}: the password nowhere`);
  }
});

t.test('webhook: with a user in the URL, an echoed short path token is still cut out whole', async (t) => {
  const hook = await receiver(t, () => 404);
  const u = new URL(hook.url);
  const { n, results } = notifier(t, [webhookChannel({ url: `http://hooks:Passw0rdLong@${u.host}/hooks/k7Q2x`, secret: SECRET })], { retries: 0 });
  n.notify(alert());
  await n.drain();
  const error = results[0]?.[1].error ?? '';
  t.match(error, /HTTP 404/);
  t.notMatch(error, /k7Q2x/, 'the path (before: the user name cut out first, so the whole path no longer matched)');
});
