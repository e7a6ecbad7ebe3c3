// Re-authentication tokens (src/gate/reauth.ts): bound to a key name, valid for five minutes, unguessable, only
// ever accepted in their own form.

import t from 'tap';
import { REAUTH_TTL_MS, ReauthTokens } from '../../src/gate/reauth.js';

t.test('a token names its key until it expires', async (t) => {
  let now = 1_000_000;
  const tokens = new ReauthTokens(() => now);
  const a = tokens.issue('admin');
  const b = tokens.issue('ops');
  t.not(a.token, b.token);
  t.equal(a.expiresAt, 1_000_000 + REAUTH_TTL_MS);
  t.equal(tokens.holder(a.token)?.keyName ?? null, 'admin');
  t.equal(tokens.holder(b.token)?.keyName ?? null, 'ops');
  now += REAUTH_TTL_MS - 1;
  t.equal(tokens.holder(a.token)?.keyName ?? null, 'admin', 'valid until the last millisecond');
  now += 1;
  t.equal(tokens.holder(a.token)?.keyName ?? null, null, 'expired after five minutes');
  t.equal(tokens.holder(b.token)?.keyName ?? null, null);
});

t.test('anything else is refused', async (t) => {
  const tokens = new ReauthTokens();
  const a = tokens.issue('admin');
  for (const bad of [null, '', 'admin', a.token.slice(0, -1), `${a.token}x`, a.token.replace('tgr_', ''), `tgr_${'A'.repeat(43)}`]) {
    t.equal(tokens.holder(bad)?.keyName ?? null, null, String(bad));
  }
  t.equal(new ReauthTokens().holder(a.token)?.keyName ?? null, null, 'another process (a restart) does not know it');
});
