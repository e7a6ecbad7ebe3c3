// Live reload on a real file: watchConfigFile polls it; a valid edit replaces holder.current within 2 s, an
// invalid edit (schema, YAML syntax, unreadable) is logged with its issues and counted through onRejected while
// the old config keeps serving, and a later valid edit is applied again.

import t from 'tap';
import { renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfigFile, type ConfigIssue } from '../../src/config/load.js';
import { ConfigHolder, watchConfigFile } from '../../src/config/watch.js';
import type { Config } from '../../src/config/types.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

interface Entry {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

function recordingLog() {
  const entries: Entry[] = [];
  const at = (level: Entry['level']) => (obj: object, msg: string) => void entries.push({ level, obj: obj as Record<string, unknown>, msg });
  return { entries, info: at('info'), warn: at('warn'), error: at('error') };
}

const yaml = (models: string[], extra = '') => `
server:
  host: 127.0.0.1
  port: 4000
storage:
  data_dir: ./data
providers:
  demo:
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    models:
${models.map((m) => `      ${m}: { kind: llm }`).join('\n')}
${extra}`;

// reloads read process.env: keep the overrides out so the file alone decides
delete process.env.PORT;
delete process.env.TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE;

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
writeFileSync(file, yaml(['echo-1']));
const holder = new ConfigHolder(loadConfigFile(file));
const log = recordingLog();
let rejected = 0;
const changes: { next: Config; prev: Config }[] = [];
holder.onChange((next, prev) => changes.push({ next, prev }));
const stop = watchConfigFile(file, holder, log, () => rejected++);
t.teardown(stop);
// the watcher takes its first stat right away; give it that moment so the first edit is seen as a change
await sleep(150);

const models = () => Object.keys(holder.current.providers.demo?.models ?? {});

t.test('a valid edit is applied within 2 s', async (t) => {
  const before = holder.current;
  const t0 = Date.now();
  writeFileSync(file, yaml(['echo-1', 'echo-2']));
  await waitFor(() => models().includes('echo-2'), 2000);
  t.ok(Date.now() - t0 < 2000, `applied after ${Date.now() - t0} ms`);
  t.same(models(), ['echo-1', 'echo-2']);
  t.not(holder.current, before, 'a new config object');
  t.ok(Object.isFrozen(holder.current) && Object.isFrozen(holder.current.providers.demo?.models), 'the new config is frozen too');
  t.equal(changes.length, 1, 'listeners told once');
  t.equal(changes[0]?.prev, before, 'with the previous config');
  t.equal(changes[0]?.next, holder.current, 'and the new one');
  t.same(Object.keys(before.providers.demo?.models ?? {}), ['echo-1'], 'the old snapshot is unchanged');
  t.ok(log.entries.some((e) => e.level === 'info' && e.msg === 'config reloaded' && e.obj.file === file), 'logged at info');
  t.equal(rejected, 0);
});

t.test('an edit of the same length with the modification time put back (a coarse clock, `cp -p`) is applied', async (t) => {
  await waitFor(() => models().includes('echo-2'), 2000);
  // A whole second, as a coarse clock gives it; the watcher's poll sees it first.
  const second = Math.floor(Date.now() / 1000) - 5;
  utimesSync(file, second, second);
  await sleep(1200);
  // As a copy that keeps times does it: the new text (as long as the one before) given that time, then put in place.
  writeFileSync(`${file}.new`, yaml(['echo-1', 'echo-3']));
  utimesSync(`${file}.new`, second, second);
  renameSync(`${file}.new`, file);
  await waitFor(() => models().includes('echo-3'), 3000).catch(() => undefined);
  t.same(models(), ['echo-1', 'echo-3'], 'applied (before: never, size and modification time being the same)');
  writeFileSync(file, yaml(['echo-1', 'echo-2']));
  await waitFor(() => models().includes('echo-2'), 2000);
});

t.test('an invalid edit is rejected, logged with its issues, and the old config stays', async (t) => {
  const before = holder.current;
  const changesBefore = changes.length;
  writeFileSync(file, yaml(['echo-1', 'echo-2', 'echo-3'], 'budgets: { daily_usd: -1 }\n').replace('price:', 'pricee:'));
  await waitFor(() => rejected === 1, 2000);
  t.equal(rejected, 1, 'onRejected called once');
  t.equal(holder.current, before, 'the previous config object keeps serving');
  t.same(models(), ['echo-1', 'echo-2']);
  t.equal(changes.length, changesBefore, 'listeners not told');
  const err = log.entries.filter((e) => e.level === 'error').at(-1);
  t.ok(err, 'an error was logged');
  t.equal(err?.obj.file, file);
  t.match(err?.msg, /rejected/);
  const issues = err?.obj.issues as ConfigIssue[];
  t.same(
    issues.map((i) => i.path).sort(),
    ['budgets.daily_usd', 'providers.demo.pricee'],
    'every issue is in the log entry, with its path',
  );
  t.ok(issues.find((i) => i.path === 'providers.demo.pricee')?.message === 'unknown key');
});

t.test('a YAML syntax error is rejected with its line', async (t) => {
  const before = holder.current;
  writeFileSync(file, 'server:\n  host: 127.0.0.1\n\tport: 4000\n');
  await waitFor(() => rejected === 2, 2000);
  t.equal(holder.current, before);
  const issues = log.entries.filter((e) => e.level === 'error').at(-1)?.obj.issues as ConfigIssue[];
  t.match(issues[0]?.message, /^YAML syntax/);
  t.equal(issues[0]?.path, 'line 3', 'the line of the error');
});

t.test('a later valid edit is applied again', async (t) => {
  writeFileSync(file, yaml(['echo-1', 'echo-2', 'echo-3']));
  await waitFor(() => models().includes('echo-3'), 2000);
  t.same(models(), ['echo-1', 'echo-2', 'echo-3']);
  t.equal(rejected, 2, 'no further rejection');
});

t.test('an edit saved by rename (how many editors save) is applied', async (t) => {
  const tmp = join(dir, '.config.yaml.swp');
  writeFileSync(tmp, yaml(['echo-4']));
  renameSync(tmp, file);
  await waitFor(() => models().includes('echo-4'), 2000);
  t.same(models(), ['echo-4']);
});

/** Write `text` to the file, wait until `applied` says the edit is in force, and return the warnings it logged. */
async function warningsOfEdit(text: string, applied: () => boolean): Promise<Entry[]> {
  const before = log.entries.filter((e) => e.level === 'warn').length;
  writeFileSync(file, text);
  await waitFor(applied, 2000);
  return log.entries.filter((e) => e.level === 'warn').slice(before);
}

t.test('an edit of start-only settings is applied and flagged as needing a restart', async (t) => {
  const warns = await warningsOfEdit(yaml(['echo-4']).replace('port: 4000', 'port: 4999').replace('data_dir: ./data', 'data_dir: ./data2'), () => holder.current.server.port === 4999);
  t.equal(warns.length, 1, 'one warning');
  t.same(warns.at(-1)?.obj.sections, ['server.port', 'storage'], 'names the sections that need a restart');
  t.match(warns.at(-1)?.msg, /restart/);
});

t.test("the request timeout is start-only too: its edit is flagged (Node's requestTimeout is set when the server is made)", async (t) => {
  const text = yaml(['echo-4']).replace('port: 4000', 'port: 4999\n  request_timeout_s: 5').replace('data_dir: ./data', 'data_dir: ./data2');
  const warns = await warningsOfEdit(text, () => holder.current.server.request_timeout_s === 5);
  t.equal(warns.length, 1, 'one warning');
  t.same(warns.at(-1)?.obj.sections, ['server.request_timeout_s']);
});

t.test('a deleted file is rejected and the config keeps serving; recreating it applies', async (t) => {
  const before = holder.current;
  const rejectedBefore = rejected;
  rmSync(file);
  await waitFor(() => rejected === rejectedBefore + 1, 2000);
  t.equal(holder.current, before, 'still serving');
  const issues = log.entries.filter((e) => e.level === 'error').at(-1)?.obj.issues as ConfigIssue[];
  t.equal(issues[0]?.path, '(file)');
  t.match(issues[0]?.message, /cannot read/);
  writeFileSync(file, yaml(['echo-5']));
  await waitFor(() => models().includes('echo-5'), 2000);
  t.same(models(), ['echo-5']);
});

t.test('after stop, edits are no longer applied', async (t) => {
  stop();
  const before = holder.current;
  writeFileSync(file, yaml(['echo-6', 'echo-7']));
  await sleep(1500);
  t.equal(holder.current, before, 'unchanged after three poll intervals');
});

t.test('an emptied file (a save caught half-written) is rejected, the old config stays', async (t) => {
  const { parseConfigText, ConfigError } = await import('../../src/config/load.js');
  t.throws(() => parseConfigText('', {}), ConfigError);
  t.throws(() => parseConfigText('# only a comment\n', {}), ConfigError);
  t.ok(parseConfigText('providers: {}\n', {}), 'a file with content but no providers is still valid');
});
