// An alert channel's URL is checked by the loader (a review of the alerts): `smtp_url: mail.example.com:587` passed
// `check-config`, then failed the gateway's start; in a live edit the channel's build threw inside the config's
// change listeners, after the config was made current and before the gate's listener ran, so the edit was logged as
// rejected while its budget applied and a key it removed went on working. Now the loader refuses such a URL (without
// quoting it: it may hold a password), and one listener that throws no longer keeps the others from an edit.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import { ConfigHolder, ListenersFailed, reloadConfigFile } from '../../src/config/watch.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const email = (smtp_url: string) => ({ alerts: { channels: { email: { smtp_url, from: 'a@example.com', to: ['b@example.com'] } } } });
const webhook = (url: string) => ({ alerts: { channels: { webhook: { url } } } });

t.test('the loader refuses a channel URL its channel cannot use, without quoting it', async (t) => {
  for (const [raw, path, said] of [
    [email('mail.example.com:587'), 'alerts.channels.email.smtp_url', /names mail\.example\.com:\/\/: give smtp:\/\//],
    [email('user:Secr3t-pw@mail'), 'alerts.channels.email.smtp_url', /give smtp:\/\//],
    [email('http://mail.example.com'), 'alerts.channels.email.smtp_url', /names http:\/\//],
    [webhook('http://'), 'alerts.channels.webhook.url', /is not a URL/],
  ] as const) {
    const err = (() => {
      try {
        parseConfig(raw);
        return null;
      } catch (e) {
        return e as { issues?: { path: string; message: string }[] };
      }
    })();
    const issue = err?.issues?.find((i) => i.path === path);
    t.ok(issue, `${path}: refused`);
    t.match(issue?.message, said);
    t.notMatch(issue?.message, /Secr3t-pw/, 'the value not quoted');
  }
  t.doesNotThrow(() => parseConfig(email('smtps://u:p@mail.example.com:465')), 'smtps:// passes');
  const off = { alerts: { channels: { email: { enabled: false, smtp_url: 'mail.example.com:587', from: 'a@example.com', to: ['b@example.com'] } } } };
  t.doesNotThrow(() => parseConfig(off), 'a channel turned off is not built: its URL is checked when it is turned on');
  t.doesNotThrow(() => parseConfig(webhook('https://hooks.example.com/x')), 'https:// passes');

  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `storage:\n  data_dir: ${join(dir, 'data')}\nalerts:\n  channels:\n    email: { smtp_url: 'mail.example.com:587', from: a@example.com, to: [b@example.com] }\n`);
  const check = await runCli(t, ['check-config', file], { cwd: dir });
  t.equal(check.code, 1, 'check-config says so (before: ok)');
  t.match(check.stderr, /alerts\.channels\.email\.smtp_url/);
});

t.test('a listener that throws: the others are told all the same, and the reload says what failed', async (t) => {
  const before = parseConfig({ budgets: { daily_usd: 1 } });
  const holder = new ConfigHolder(before);
  const told: string[] = [];
  holder.onChange(() => {
    throw new Error('a channel could not be built');
  });
  holder.onChange((next) => void told.push(`gate saw ${next.budgets.daily_usd}`));
  const next = parseConfig({ budgets: { daily_usd: 2 } });
  t.throws(() => holder.replace(next), ListenersFailed);
  t.same(told, ['gate saw 2'], 'the listener after the one that threw was told (before: never)');
  t.equal(holder.current, next);

  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'budgets:\n  daily_usd: 3\n');
  const lines: { level: string; msg: string }[] = [];
  const log = { info: (_o: object, msg: string) => void lines.push({ level: 'info', msg }), warn: (_o: object, msg: string) => void lines.push({ level: 'warn', msg }), error: (_o: object, msg: string) => void lines.push({ level: 'error', msg }) };
  let rejected = 0;
  reloadConfigFile(file, holder, log, () => rejected++);
  t.equal(rejected, 0, 'not counted as rejected: it was applied');
  t.same(told, ['gate saw 2', 'gate saw 3']);
  t.same(lines.map((l) => l.msg), ['config reloaded, but a part of the gateway could not take the edit', 'config reloaded']);
});

t.test('the console turning on a channel whose URL its channel cannot use: a 400 naming it, the file untouched', async (t) => {
  const { startApp } = await import('../helpers/app.js');
  const { readFileSync } = await import('node:fs');
  const { parse } = await import('yaml');
  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  const text = `server:\n  host: 127.0.0.1\nstorage:\n  data_dir: ${join(dir, 'data')}\nalerts:\n  channels:\n    email: { enabled: false, smtp_url: 'mail.example.com:587', from: a@example.com, to: [b@example.com] }\n`;
  writeFileSync(file, text);
  const gw = await startApp(t, parse(text) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });
  const res = await fetch(`${gw.url}/api/settings/alerts`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ channels: { email: { enabled: true } } }) });
  const body = (await res.json()) as { error: { code: string; param: string | null } };
  t.equal(res.status, 400, 'refused (before: a 500, the file written with the channel on, and the next start failing)');
  t.equal(body.error.param, 'alerts.channels.email.smtp_url');
  t.equal(readFileSync(file, 'utf8'), text, 'the file untouched');
});
