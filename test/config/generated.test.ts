// The config validators are compiled at build time (scripts/build-validators.mjs, Ajv's standalone code) into
// src/config/generated/, which is committed: the committed modules must be what the schema in src/config/schema.ts
// gives today, or the gateway validates against an old schema. The check is run on a copy made stale too, to show
// that it catches one, and that regenerating gives the committed text back.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'build-validators.mjs');
const GENERATED = join(ROOT, 'src', 'config', 'generated');
const FILES = ['config-validator.ts', 'config-types-validator.ts'];

/** Exit code and stderr of the script with `args`. */
function run(args: string[]): { code: number; stderr: string } {
  try {
    execFileSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { status: number; stderr: string };
    return { code: e.status, stderr: e.stderr };
  }
}

t.test('the committed validators are what the schema compiles to', async (t) => {
  const r = run(['--check']);
  t.equal(r.code, 0, r.stderr || 'fresh');
});

t.test('a stale validator is caught, and regenerating gives the committed text', async (t) => {
  const dir = tempDir(t, 'tollgate-validators-');
  for (const f of FILES) writeFileSync(join(dir, f), readFileSync(join(GENERATED, f), 'utf8'));
  t.equal(run(['--check', '--dir', dir]).code, 0, 'a faithful copy passes');
  writeFileSync(join(dir, FILES[1]!), readFileSync(join(GENERATED, FILES[1]!), 'utf8').replace('"minimum":0', '"minimum":1'));
  const stale = run(['--check', '--dir', dir]);
  t.equal(stale.code, 1, 'an edited copy fails the check');
  t.match(stale.stderr, FILES[1]!, 'naming the stale module');
  t.notMatch(stale.stderr, FILES[0]!, 'and only it');
  t.equal(run(['--dir', dir]).code, 0, 'regenerated');
  for (const f of FILES) t.equal(readFileSync(join(dir, f), 'utf8'), readFileSync(join(GENERATED, f), 'utf8'), `${f} as committed`);
});

t.test('the generated modules load no Ajv compiler, only its runtime helpers', async (t) => {
  for (const f of FILES) {
    const imports = [...readFileSync(join(GENERATED, f), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    t.ok(imports.length > 0 && imports.every((p) => p!.startsWith('ajv/dist/runtime/')), `${f}: ${imports.join(', ')}`);
    t.notMatch(readFileSync(join(GENERATED, f), 'utf8'), /require\(/, `${f} has no require() left (an ES module)`);
  }
});
