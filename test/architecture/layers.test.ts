// The layering of src/ (docs/architecture.md, .dependency-cruiser.cjs): no folder imports one above it, no import
// circle, no file over 400 lines (code generated at build time aside). The same rules run on a small tree with one
// upward import and one circle, to show they catch them.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', '.bin', 'depcruise');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

interface Violation { rule: { name: string }; from: string; to: string }

function cruise(cwd: string): Violation[] {
  let out: string;
  try {
    out = execFileSync(DEPCRUISE, ['src', '--config', CONFIG, '--output-type', 'json'], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    out = (err as { stdout: string }).stdout; // exits non-zero when there are violations
  }
  return (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}

t.test('src/ keeps its layers: no upward import, no circle', async (t) => {
  const found = cruise(ROOT);
  t.same(found.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`), []);
});

t.test('the rules catch an upward import and a circle', async (t) => {
  const dir = tempDir(t, 'tollgate-layers-');
  for (const d of ['src/core', 'src/config', 'src/pipeline']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' } }));
  writeFileSync(join(dir, 'src/config/types.ts'), 'export type Config = { a: number };\n');
  writeFileSync(join(dir, 'src/core/own.ts'), "import type { Config } from '../config/types.js';\nexport const x = (c: Config) => c.a;\n");
  writeFileSync(join(dir, 'src/pipeline/a.ts'), "import { b } from './b.js';\nexport const a = () => b;\n");
  writeFileSync(join(dir, 'src/pipeline/b.ts'), "import { a } from './a.js';\nexport const b = () => a;\n");
  const names = cruise(dir).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
  t.ok(names.includes('core-imports-above: src/core/own.ts -> src/config/types.ts'), names.join('\n'));
  t.ok(names.some((n) => n.startsWith('no-circular: src/pipeline/')), 'the circle is found');
});

t.test('no file in src/ over 400 lines (code generated at build time aside: src/**/generated/)', async (t) => {
  const long: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'generated') walk(p);
      } else if (name.endsWith('.ts')) {
        const lines = readFileSync(p, 'utf8').split('\n').length - 1;
        if (lines > 400) long.push(`${p.slice(ROOT.length)}: ${lines}`);
      }
    }
  };
  walk(join(ROOT, 'src'));
  t.same(long, []);
});
