// A re-authentication token is bound to its key, not only to the key's name (src/gate/reauth.ts, src/gate/keys.ts):
// rotating the key (same name, new value) or changing its role by a live config change voids the tokens it obtained,
// with 401 TOLLGATE_ERR_REAUTH_REQUIRED (docs/security.md); a reload that leaves the key as it was keeps them.
// Bound to the name only, a token a leaked key obtained outlived the key's rotation.

import t from 'tap';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import type { ApiKey } from '../../src/config/types.js';
import { errorCode, send } from '../helpers/raw-http.js';
import { KeyRing } from '../../src/gate/keys.js';
import { ReauthTokens } from '../../src/gate/reauth.js';

const OLD = 'k-ops-old-0123456789abcdef';
const NEW = 'k-ops-new-9876543210fedcba';
const OTHER = 'k-other-admin-0123456789ab';

const gw: TestApp = await startApp(t, {
  server: { api_keys: [{ name: 'ops', key: OLD, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }], rate_limit: { auth_failures_per_minute: 1_000_000 } },
  providers: { demo: DEMO_PROVIDER },
});
const initial = gw.holder.current;

/** Replace server.api_keys live, as a config reload does (the gate listens to the holder). */
function reloadKeys(keys: ApiKey[]): void {
  const cfg = gw.holder.current;
  gw.holder.replace({ ...cfg, server: { ...cfg.server, api_keys: keys } });
}

async function tokenFor(key: string): Promise<string> {
  const a = await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${key}` } });
  if (a.status !== 200) throw new Error(`reauth: ${a.status} ${a.body}`);
  return (JSON.parse(a.body) as { token: string }).token;
}

const exportWith = (token: string) => send(gw.url, 'POST', '/api/admin/export', { headers: { authorization: `Bearer ${token}` } });

t.test('a reload that leaves the key alone keeps its token; rotating the key voids it', async (t) => {
  t.teardown(() => gw.holder.replace(initial));
  const token = await tokenFor(OLD);
  t.equal((await exportWith(token)).status, 200, 'the token works');

  // Another key added, a limit changed: `ops` is as it was.
  const cfg = gw.holder.current;
  gw.holder.replace({
    ...cfg,
    server: { ...cfg.server, api_keys: [...cfg.server.api_keys, { name: 'ci', key: 'k-ci-0123456789abcdef', role: 'user' }], rate_limit: { ...cfg.server.rate_limit, requests_per_minute: 100_000 } },
  });
  const kept = await exportWith(token);
  t.equal(kept.status, 200, 'still accepted after a reload that did not change the key');
  t.match(kept.headers['content-type'], /^application\/gzip/);

  reloadKeys([{ name: 'ops', key: NEW, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }]);
  t.equal((await send(gw.url, 'GET', '/api/usage', { headers: { authorization: `Bearer ${OLD}` } })).status, 401, 'the old key is refused');
  const refused = await exportWith(token);
  t.equal(refused.status, 401, 'the token the old key obtained is refused');
  t.equal(errorCode(refused), 'TOLLGATE_ERR_REAUTH_REQUIRED');
  t.notOk(refused.body.includes(token) || refused.body.includes(OLD), 'neither the token nor the key is echoed');

  const fresh = await tokenFor(NEW);
  t.equal((await exportWith(fresh)).status, 200, 'the new key gets a token that works');

  reloadKeys([{ name: 'ops', key: OLD, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }]);
  t.equal((await exportWith(token)).status, 401, 'rotated back to the old value: the old token stays void');
  t.equal((await exportWith(fresh)).status, 401, "and the new value's token is void too");
});

t.test('a role change voids the token for good', async (t) => {
  t.teardown(() => gw.holder.replace(initial));
  const token = await tokenFor(OLD);
  reloadKeys([{ name: 'ops', key: OLD, role: 'user' }, { name: 'other', key: OTHER, role: 'admin' }]);
  const asUser = await exportWith(token);
  t.equal(asUser.status, 401, 'refused while the key is a user');
  t.equal(errorCode(asUser), 'TOLLGATE_ERR_REAUTH_REQUIRED');
  reloadKeys([{ name: 'ops', key: OLD, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }]);
  const back = await exportWith(token);
  t.equal(back.status, 401, 'made an admin again: the token stays void');
  t.equal(errorCode(back), 'TOLLGATE_ERR_REAUTH_REQUIRED');
  t.equal((await exportWith(await tokenFor(OLD))).status, 200, 'a new token works');
});

t.test("a key's binding: the same while the key is, different after a rotation or a role change, never the key", async (t) => {
  const ring = (keys: ApiKey[]) => new KeyRing(keys);
  const a = ring([{ name: 'ops', key: OLD, role: 'admin' }]).byName('ops')!;
  t.equal(ring([{ name: 'x', key: 'k-x-0123456789abcdef', role: 'user' }, { name: 'ops', key: OLD, role: 'admin' }]).byName('ops')!.binding, a.binding, 'same key and role in another ring: same binding');
  t.equal(ring([{ name: 'ops', key: OLD, role: 'admin' }]).match(OLD)!.binding, a.binding, 'match and byName agree');
  t.not(ring([{ name: 'ops', key: NEW, role: 'admin' }]).byName('ops')!.binding, a.binding, 'rotated: another binding');
  t.not(ring([{ name: 'ops', key: OLD, role: 'user' }]).byName('ops')!.binding, a.binding, 'another role: another binding');
  t.match(a.binding, /^[0-9a-f]{64}$/);
  t.notOk(a.binding.includes(OLD), 'not the key');

  const tokens = new ReauthTokens();
  const kept = tokens.issue('ops', 'b1');
  const dropped = tokens.issue('ops', 'b0');
  t.same(tokens.holder(kept.token), { keyName: 'ops', binding: 'b1' });
  tokens.keepOnly((h) => h.binding === 'b1');
  t.equal(tokens.holder(kept.token)?.keyName ?? null, 'ops', 'kept');
  t.equal(tokens.holder(dropped.token)?.keyName ?? null, null, 'voided');
});

// GET /api/live's stream, opened with a key, outlived the key: a reload that removed or rotated it left the stream
// sending every request in flight (ids, models, key names, cost so far) until the process restarted. It ends now, as
// the key's reauth tokens are voided; a stream whose key the reload left alone stays open.
t.test('a reload that revokes, rotates or re-roles a key ends the /api/live streams opened with it', async (t) => {
  t.teardown(() => gw.holder.replace(initial));
  /** Open /api/live with `key`; resolves `ended` when the gateway ends the stream. */
  const open = async (key: string) => {
    const ctl = new AbortController();
    t.teardown(() => ctl.abort());
    const res = await fetch(`${gw.url}/api/live`, { headers: { authorization: `Bearer ${key}` }, signal: ctl.signal });
    t.equal(res.status, 200, 'the stream opens');
    let done = false;
    const ended = (async () => {
      try {
        for await (const _ of res.body!);
        done = true;
      } catch {
        // aborted by the test
      }
    })();
    return { ended, isEnded: () => done };
  };
  const settle = () => new Promise((r) => setTimeout(r, 150));
  /** Whether `ended` came within 3 s (a stream that is never ended fails here, not at the suite's timeout). */
  const endsSoon = (s: { ended: Promise<void> }) => Promise.race([s.ended.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 3_000))]);

  const ops = await open(OLD);
  const other = await open(OTHER);
  // A reload that leaves both keys alone (one more key): both streams stay.
  reloadKeys([{ name: 'ops', key: OLD, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }, { name: 'ci', key: 'k-ci-0123456789abcdef', role: 'user' }]);
  await settle();
  t.notOk(ops.isEnded() || other.isEnded(), 'a reload that changes neither key ends neither stream');

  reloadKeys([{ name: 'ops', key: NEW, role: 'admin' }, { name: 'other', key: OTHER, role: 'admin' }]);
  t.ok(await endsSoon(ops), "the rotated key's stream ended");
  await settle();
  t.notOk(other.isEnded(), "the other key's stream is still open");

  reloadKeys([{ name: 'ops', key: NEW, role: 'admin' }, { name: 'other', key: OTHER, role: 'user' }]);
  t.ok(await endsSoon(other), "a role change ends the key's stream too (the client may open it again with what the key now allows)");
  const again = await open(OTHER);
  reloadKeys([{ name: 'ops', key: NEW, role: 'admin' }]);
  t.ok(await endsSoon(again), "a removed key's stream ended");
  t.equal((await send(gw.url, 'GET', '/api/live', { headers: { authorization: `Bearer ${OTHER}` } })).status, 401, 'and the key is refused');

  // A reload that removes every key (open mode) ends the streams opened with one too.
  const last = await open(NEW);
  reloadKeys([]);
  t.ok(await endsSoon(last), 'no keys left: the stream opened with a key ended');
});
