// The config validators (Ajv's standalone code of src/config/schema.ts) and the catalog index (what pricing needs of
// the catalog package) are made at build time (scripts/build-generated.mjs) into src/config/generated/, which is
// committed: the committed modules must be what their sources give today, or the gateway validates against an old
// schema or prices from an old catalog. The check is run on a copy made stale too, to show that it catches one, and
// that regenerating gives the committed text back.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'build-generated.mjs');
const GENERATED = join(ROOT, 'src', 'config', 'generated');
const VALIDATORS = ['config-validator.ts', 'config-types-validator.ts'];
const FILES = [...VALIDATORS, 'catalog-index.ts'];

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

t.test('the committed modules are what the schema and the catalog give', async (t) => {
  const r = run(['--check']);
  t.equal(r.code, 0, r.stderr || 'fresh');
});

t.test('a stale module is caught, and regenerating gives the committed text', async (t) => {
  const dir = tempDir(t, 'tollgate-generated-');
  for (const f of FILES) writeFileSync(join(dir, f), readFileSync(join(GENERATED, f), 'utf8'));
  t.equal(run(['--check', '--dir', dir]).code, 0, 'a faithful copy passes');
  const edit = (f: string, from: string, to: string) => writeFileSync(join(dir, f), readFileSync(join(GENERATED, f), 'utf8').replace(from, to));
  edit('config-types-validator.ts', '"minimum":0', '"minimum":1');
  edit('catalog-index.ts', '"input":', '"input":0.5+');
  const stale = run(['--check', '--dir', dir]);
  t.equal(stale.code, 1, 'edited copies fail the check');
  t.match(stale.stderr, 'config-types-validator.ts', 'naming the stale validator');
  t.match(stale.stderr, 'catalog-index.ts', 'and the stale catalog index');
  t.notMatch(stale.stderr, 'config-validator.ts', 'not the one left as it was');
  t.equal(run(['--dir', dir]).code, 0, 'regenerated');
  // compared as booleans: a failure would print two copies of 200 kB modules
  for (const f of FILES) t.ok(readFileSync(join(dir, f), 'utf8') === readFileSync(join(GENERATED, f), 'utf8'), `${f} as committed`);
});

t.test('the generated validators load no Ajv compiler, only its runtime helpers', async (t) => {
  for (const f of VALIDATORS) {
    const imports = [...readFileSync(join(GENERATED, f), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    t.ok(imports.length > 0 && imports.every((p) => p!.startsWith('ajv/dist/runtime/')), `${f}: ${imports.join(', ')}`);
    t.notMatch(readFileSync(join(GENERATED, f), 'utf8'), /require\(/, `${f} has no require() left (an ES module)`);
  }
});
