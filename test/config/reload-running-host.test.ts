// A live edit is checked against the gateway as it runs, and a settings write keeps the file as the operator had it:
// - server.host applies at a restart only, so the keys an edit leaves are checked against the address the gateway
//   listens on. Before, an edit of server.host to 127.0.0.1 with the keys removed was applied: a gateway listening on
//   a public address went open to anyone (the open mode's Host check is a header any client sets). The same through
//   a weak key, and through the settings API once such an edit was on disk (a 409 now, the file untouched).
// - a settings write keeps the file's mode exactly (the umask narrowed it) and its owner and group (a gateway run as
//   root made the operator's file root's); `tollgate providers add` writes through a symlink to its target (it
//   replaced the link with a file) and keeps the same mode.

import t from 'tap';
import { chmodSync, chownSync, lstatSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { demoProvidersYaml, startApp } from '../helpers/app.js';
import { reloadConfigFile } from '../../src/config/watch.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'a3f1c9d27be04e6f8a1b5c7d9e0f2a4b';
const dir = tempDir(t);
const file = join(dir, 'config.yaml');
// The file says 0.0.0.0 (the test listens on 127.0.0.1: startApp), so the gateway runs as one on a public address.
const head = (host: string, keys: string) => `server:\n  host: ${host}\n${keys}storage:\n  data_dir: ${join(dir, 'data')}\n  batch: { flush_ms: 50 }\n`;
const KEYS = `  api_keys:\n    - { name: admin, key: ${KEY}, role: admin }\n`;
const TEXT = `${head('0.0.0.0', KEYS)}${demoProvidersYaml()}budgets:\n  daily_usd: 10\n`;
writeFileSync(file, TEXT);
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

function log() {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}
const status = async (key?: string) => (await fetch(`${gw.url}/api/settings`, { headers: key === undefined ? { host: '127.0.0.1' } : { authorization: `Bearer ${key}` } })).status;

t.test('an edit of server.host with the keys removed or weak is rejected: the listener stays closed', async (t) => {
  t.equal(await status(), 401, 'no key: refused, before');
  for (const [what, text] of [
    ['keys removed', `${head('127.0.0.1', '')}${demoProvidersYaml()}budgets:\n  daily_usd: 20\n`],
    ['a weak key', `${head('127.0.0.1', '  api_keys:\n    - { name: admin, key: admin, role: admin }\n')}${demoProvidersYaml()}budgets:\n  daily_usd: 20\n`],
  ] as const) {
    writeFileSync(file, text);
    const l = log();
    let rejected = 0;
    reloadConfigFile(file, gw.holder, l, () => rejected++);
    t.equal(rejected, 1, `${what}: rejected`);
    const err = l.lines.find((x) => x.level === 'error');
    t.match(JSON.stringify(err?.obj.issues), /server\.api_keys.*0\.0\.0\.0.*listens there until it restarts/, `${what}: the issue names the address it listens on`);
    t.equal(gw.holder.current.budgets.daily_usd, 10, `${what}: nothing of the edit applied`);
    t.equal(await status(), 401, `${what}: no key: still refused (Host 127.0.0.1 or not)`);
    t.equal(await status('admin'), 401, `${what}: the weak key refused`);
    t.equal(await status(KEY), 200, `${what}: the key in force still works`);
  }

  // Such a file on disk: a settings write is a 409, and the file is left as it is.
  const onDisk = readFileSync(file, 'utf8');
  const put = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ daily_usd: 30 }) });
  const body = (await put.json()) as { error: { code: string; message: string } };
  t.equal(put.status, 409, 'a settings write on top of it: a conflict');
  t.equal(body.error.code, 'TOLLGATE_ERR_CONFIG_CONFLICT');
  t.match(body.error.message, /server\.api_keys\[0\]\.key.*0\.0\.0\.0/);
  t.equal(readFileSync(file, 'utf8'), onDisk, 'the file untouched');
  t.equal(gw.holder.current.budgets.daily_usd, 10, 'nothing applied');

  // An edit of server.host that keeps strong keys is applied as before (the host itself at the next start).
  writeFileSync(file, `${head('127.0.0.1', KEYS)}${demoProvidersYaml()}budgets:\n  daily_usd: 40\n`);
  reloadConfigFile(file, gw.holder, log());
  t.equal(gw.holder.current.budgets.daily_usd, 40, 'applied');
  t.equal(await status(), 401, 'and the listener still asks for a key');
});

t.test('a settings write keeps the mode exactly, and the owner', async (t) => {
  writeFileSync(file, TEXT);
  chmodSync(file, 0o666);
  const root = process.getuid?.() === 0;
  if (root) chownSync(file, 65534, 65534); // an operator's file, the gateway run as root
  const before = statSync(file);
  const umask = process.umask(0o022);
  t.teardown(() => void process.umask(umask));
  const put = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ daily_usd: 50 }) });
  t.equal(put.status, 200, await put.text());
  const after = statSync(file);
  t.equal((after.mode & 0o777).toString(8), '666', 'the mode as it was (the umask would make it 644)');
  t.same([after.uid, after.gid], [before.uid, before.gid], root ? 'the owner and group as they were (nobody:nogroup, not root)' : 'the owner and group as they were');
  t.match(readFileSync(file, 'utf8'), /daily_usd: 50/);
});

t.test('providers add through a symlink: the target gets the provider, the link stays, the mode kept', async (t) => {
  const d = tempDir(t);
  const target = join(d, 'real.yaml');
  const link = join(d, 'config.yaml');
  writeFileSync(target, `storage:\n  data_dir: ${join(d, 'data')}\n`);
  chmodSync(target, 0o660);
  symlinkSync(target, link);
  const r = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', link], { cwd: d });
  t.equal(r.code, 0, r.stderr);
  t.ok(lstatSync(link).isSymbolicLink(), 'still a link');
  t.match(readFileSync(target, 'utf8'), /openai:/, 'the target has the provider');
  t.equal((statSync(target).mode & 0o777).toString(8), '660', 'its mode kept');
});

// A review of the session's fixes: the temporary file's name was the pid's, and the write, the chmod and the chown
// followed a link planted there: as root, one settings write handed the link's target (any file) to the config
// directory's owner. The name is random now and the file created exclusively, its mode and owner set on the open file.
t.test('a link planted at the old temporary name is not followed', async (t) => {
  writeFileSync(file, TEXT);
  const victim = join(tempDir(t), 'victim');
  writeFileSync(victim, 'ROOT ONLY\n', { mode: 0o600 });
  const planted = join(dir, `.config.yaml.${process.pid}.tmp`);
  symlinkSync(victim, planted);
  t.teardown(() => rmSync(planted, { force: true }));
  const put = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ daily_usd: 60 }) });
  t.equal(put.status, 200, await put.text());
  t.equal(readFileSync(victim, 'utf8'), 'ROOT ONLY\n', 'the link\'s target untouched');
  t.equal((statSync(victim).mode & 0o777).toString(8), '600', 'its mode too');
  t.notOk(lstatSync(file).isSymbolicLink(), 'the config is still a file, not the planted link');
  t.match(readFileSync(file, 'utf8'), /daily_usd: 60/);
});

// A config this process may not write (root's 0644, the gateway run as another user) in a directory it may write
// was replaced through the directory, and became that user's. Refused now, the file untouched. Needs root to make.
t.test('a config the process may not write is refused, not replaced through the directory', async (t) => {
  const d = tempDir(t);
  chmodSync(d, 0o777);
  const f = join(d, 'config.yaml');
  const text = `storage:\n  data_dir: ${join(d, 'data')}\n`;
  writeFileSync(f, text, { mode: 0o644 });
  const root = process.getuid?.() === 0;
  t.ok(root, 'run as root, as CI is: the case needs a file of another user');
  if (!root) return;
  const { runProcess, MAIN, cleanEnv } = await import('../helpers/cli.js');
  const r = await runProcess(t, '/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, MAIN, 'providers', 'add', 'openai', '--model', 'gpt-4o', '--config', f], { cwd: d, env: cleanEnv(), timeoutMs: 30_000 });
  t.equal(r.code, 1, `refused (${r.stderr.trim()})`);
  t.match(r.stderr, /may not write it/);
  t.equal(readFileSync(f, 'utf8'), text, 'the file untouched');
  t.same([statSync(f).uid, (statSync(f).mode & 0o777).toString(8)], [0, '644'], 'still root\'s, 0644');
});

// A review of the fix above: a gateway user in the file's group (not its owner) took the file over whole: the chown
// of owner and group failed as one, and the group went with it, so the operator's group lost its access.
t.test('written by a member of the file\'s group: the group kept', async (t) => {
  const d = tempDir(t);
  chmodSync(d, 0o777);
  const f = join(d, 'config.yaml');
  writeFileSync(f, `storage:\n  data_dir: ${join(d, 'data')}\n`, { mode: 0o660 });
  const root = process.getuid?.() === 0;
  t.ok(root, 'run as root, as CI is: the case needs a file of another user');
  if (!root) return;
  chownSync(f, 1000, 4242);
  chmodSync(f, 0o660);
  const { runProcess, MAIN, cleanEnv } = await import('../helpers/cli.js');
  const r = await runProcess(t, '/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--groups=4242', process.execPath, MAIN, 'providers', 'add', 'openai', '--model', 'gpt-4o', '--config', f], { cwd: d, env: cleanEnv(), timeoutMs: 30_000 });
  t.match(readFileSync(f, 'utf8'), /openai:/, `written (${r.stderr.trim().slice(0, 200)})`);
  t.same([statSync(f).gid, (statSync(f).mode & 0o777).toString(8)], [4242, '660'], 'its group and mode kept (before: nogroup)');
});

// A link is followed only to a file its owner owns (or when root made it): a gateway run as root wrote wherever the
// config directory's owner pointed config.yaml, another user's file (root's /etc/shadow, say) included.
t.test('a link made by another user than its target\'s owner is not written through', async (t) => {
  const d = tempDir(t);
  const victim = join(tempDir(t), 'roots.yaml');
  const text = `storage:\n  data_dir: ${join(d, 'data')}\n`;
  writeFileSync(victim, text, { mode: 0o600 });
  const link = join(d, 'config.yaml');
  symlinkSync(victim, link);
  const root = process.getuid?.() === 0;
  t.ok(root, 'run as root, as CI is: the case needs a link of another user');
  if (!root) return;
  const { lchownSync } = await import('node:fs');
  lchownSync(link, 65534, 65534); // the directory's owner made it
  const r = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', link], { cwd: d });
  t.equal(r.code, 1, 'refused');
  t.match(r.stderr, /the gateway runs as root and the link .*config\.yaml on its path is another user's \(uid 65534\)/);
  t.equal(readFileSync(victim, 'utf8'), text, 'the other user\'s file untouched');
  lchownSync(link, 0, 0); // root made it: followed, as a ConfigMap's links are
  const ok = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', link], { cwd: d });
  t.equal(ok.code, 0, ok.stderr);
  t.match(readFileSync(victim, 'utf8'), /openai:/);
});

// A review of that rule: it looked at the named path only. A root-made link to a user's link (a chain), a directory on
// the path that is a user's link, and a directory the user owns (swapped for a link during the write: 16,856 of 20,000
// writes got through a race) all let the user steer a root gateway's write. Now, run as root, every link met resolving
// the path must be root's and every directory above the file root's and writable by no one else.
t.test('run as root: a user\'s link anywhere on the path, or a user\'s directory above the file, is refused', async (t) => {
  const root = process.getuid?.() === 0;
  t.ok(root, 'run as root, as CI is: the cases need another user\'s links and directories');
  if (!root) return;
  const { lchownSync, mkdirSync } = await import('node:fs');
  const base = tempDir(t);
  const text = (d: string) => `storage:\n  data_dir: ${join(d, 'data')}\n`;
  // A: a root-made link to a user's link, which points at a root file.
  const victim = join(base, 'victim.yaml');
  writeFileSync(victim, text(base), { mode: 0o640 });
  const userLink = join(base, 'user-link.yaml');
  symlinkSync(victim, userLink);
  lchownSync(userLink, 65534, 65534);
  const rootLink = join(base, 'config-a.yaml');
  symlinkSync(userLink, rootLink);
  // B: the file reached through a directory that is a user's link.
  const rootDir = join(base, 'root-app');
  mkdirSync(rootDir, { mode: 0o700 });
  writeFileSync(join(rootDir, 'config.yaml'), text(base), { mode: 0o600 });
  const dirLink = join(base, 'user-dir');
  symlinkSync(rootDir, dirLink);
  lchownSync(dirLink, 65534, 65534);
  // C: the file in a directory the user owns (which the user could swap for a link during the write).
  const userDir = join(base, 'home');
  mkdirSync(userDir, { mode: 0o755 });
  writeFileSync(join(userDir, 'config.yaml'), text(base), { mode: 0o644 });
  // D: a link root made, in that directory: the user could swap it for a link of its own during the write.
  symlinkSync(victim, join(userDir, 'root-made.yaml'));
  chownSync(userDir, 65534, 65534);
  for (const [name, path, said, file] of [
    ['A chain', rootLink, /the link .*user-link\.yaml on its path is another user's/, victim],
    ['B directory link', join(dirLink, 'config.yaml'), /the link .*user-dir on its path is another user's/, join(rootDir, 'config.yaml')],
    ['C user directory', join(userDir, 'config.yaml'), /the directory .*home on its path is another user's \(uid 65534\)/, join(userDir, 'config.yaml')],
    ['D root link in a user directory', join(userDir, 'root-made.yaml'), /the directory .*home on its path is another user's/, victim],
  ] as const) {
    const before = readFileSync(file, 'utf8');
    const r = await runCli(t, ['providers', 'add', 'openai', '--model', 'gpt-4o', '--config', path], { cwd: base });
    t.equal(r.code, 1, `${name}: refused`);
    t.match(r.stderr, said, name);
    t.equal(readFileSync(file, 'utf8'), before, `${name}: the file untouched`);
  }
});
