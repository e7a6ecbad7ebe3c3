// The config file editor (src/config/edit.ts) on YAML that shares nodes and on a symlinked file: an edit that goes
// through an alias, or changes an anchored node that aliases name, changes only the entry it is for (every other
// entry keeps its value); a write through a symlink lands in the link's target and leaves the link a link; a file
// that is not there is a ConfigFileError.

import t from 'tap';
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { applyEdits, readConfigFile, writeConfigFile } from '../../src/config/edit.js';
import { tempDir } from '../helpers/tmp.js';

const SHARED = `providers:
  demo:
    price: &p { input: 1, output: 2 } # shared
    models: { echo-1: { kind: llm } }
  demo2:
    price: *p
    models: { echo-2: { kind: llm } }
`;

type Tree = { providers: Record<string, { price?: Record<string, number> }> };
const prices = (text: string) => Object.fromEntries(Object.entries((parse(text) as Tree).providers).map(([id, p]) => [id, p.price]));

t.test('an edit through an alias: the aliased entry gets its own copy, the anchored one is unchanged', async (t) => {
  let out = '';
  t.doesNotThrow(() => (out = applyEdits(SHARED, [{ path: ['providers', 'demo2', 'price', 'input'], value: 5 }])));
  t.same(prices(out), { demo: { input: 1, output: 2 }, demo2: { input: 5, output: 2 } });
  t.match(out, /# shared/, 'comments kept');
  const removed = applyEdits(SHARED, [{ path: ['providers', 'demo2', 'price', 'output'], value: undefined }]);
  t.same(prices(removed), { demo: { input: 1, output: 2 }, demo2: { input: 1 } }, 'a removal through an alias too');
});

t.test('an edit of an anchored node that aliases name: the other entries keep their value', async (t) => {
  const out = applyEdits(SHARED, [{ path: ['providers', 'demo', 'price', 'input'], value: 7 }]);
  t.same(prices(out), { demo: { input: 7, output: 2 }, demo2: { input: 1, output: 2 } });
  const whole = `providers:\n  demo: &d\n    price: { input: 1 }\n  demo3: *d\n`;
  t.same(prices(applyEdits(whole, [{ path: ['providers', 'demo', 'price', 'input'], value: 3 }])), { demo: { input: 3 }, demo3: { input: 1 } }, 'a whole entry aliased');
  t.same(prices(applyEdits(whole, [{ path: ['providers', 'demo3', 'price', 'input'], value: 4 }])), { demo: { input: 1 }, demo3: { input: 4 } }, 'edited through the aliased entry');
  const scalar = `providers:\n  demo:\n    price: { input: &i 1 }\n  demo2:\n    price: { output: *i }\n`;
  t.same(prices(applyEdits(scalar, [{ path: ['providers', 'demo', 'price', 'input'], value: 9 }])), { demo: { input: 9 }, demo2: { output: 1 } }, 'an anchored scalar');
  const plain = 'providers:\n  demo:\n    price: { input: 1 }   # as written\n';
  t.equal(applyEdits(plain, [{ path: ['providers', 'demo', 'price', 'input'], value: 2 }]), plain.replace('input: 1', 'input: 2'), 'no alias: edited in its bytes as before');
});

t.test('a write through a symlink lands in its target; the link stays a link', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'real'));
  const target = join(dir, 'real', 'config.yaml');
  const link = join(dir, 'config.yaml');
  const text = `storage:\n  data_dir: ${join(dir, 'data')}\nbudgets:\n  daily_usd: 10\n`;
  writeFileSync(target, text, { mode: 0o640 });
  symlinkSync(target, link);
  const next = applyEdits(readConfigFile(link).text, [{ path: ['budgets', 'daily_usd'], value: 77 }]);
  const r = writeConfigFile(link, next, { env: {} });
  t.equal(r.config.budgets.daily_usd, 77);
  t.ok(lstatSync(link).isSymbolicLink(), 'still a symlink');
  t.equal(readFileSync(target, 'utf8'), text.replace('10', '77'), 'the target has the edit');
  t.equal(lstatSync(target).mode & 0o777, 0o640, 'and its mode');
});

t.test('a config file that is not there is a ConfigFileError', async (t) => {
  const dir = tempDir(t);
  t.throws(() => readConfigFile(join(dir, 'gone.yaml')), { name: 'ConfigFileError', message: /cannot be read \(ENOENT/ });
});
