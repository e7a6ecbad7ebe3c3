// An edit's result in the file's own form (src/config/line-ends.ts): a CRLF file's every line ends CRLF after any edit
// (applyEdits: a scalar set, a key, a model or a section added, a key removed; `providers add`, as text and through
// the CLI's file write), an LF file stays LF, a byte order mark is kept, a file with both line ends is written with the
// one most of its lines have. Before, an edit that added or removed a key wrote LF line ends and no byte order mark,
// and `providers add` wrote its new lines with LF into a CRLF file.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { applyEdits, type SettingEdit } from '../../src/config/edit.js';
import { addProvider } from '../../src/config/edit-providers.js';
import { parseConfigText } from '../../src/config/load.js';
import { addProviderToFile } from '../../src/cli/providers.js';
import { tempDir } from '../helpers/tmp.js';

const TEXT = `# top comment
budgets:
  daily_usd: 10        # aligned comment
providers:
  demo:
    name: |
      The demo,
      answered in process
    group: paid
    format: mock
    price: { input: 1, output: 2 }   # flow map
    models:
      echo-1: { kind: llm }
      echo-2:
        kind: llm
`;
const CRLF = TEXT.replace(/\n/g, '\r\n');
const ends = (text: string) => ({ crlf: text.split('\r\n').length - 1, bareLf: text.split(/(?<!\r)\n/).length - 1 });
const lf = (text: string) => text.replace(/\r\n/g, '\n');

const EDITS: { name: string; edits: SettingEdit[]; read: (doc: Record<string, any>) => unknown; want: unknown }[] = [ // eslint-disable-line @typescript-eslint/no-explicit-any
  { name: 'a scalar set', edits: [{ path: ['budgets', 'daily_usd'], value: 12 }], read: (d) => d.budgets.daily_usd, want: 12 },
  { name: 'a key added', edits: [{ path: ['budgets', 'monthly_usd'], value: 300 }], read: (d) => d.budgets, want: { daily_usd: 10, monthly_usd: 300 } },
  {
    name: 'a model added', edits: [{ path: ['providers', 'demo', 'models', 'echo-3'], value: { kind: 'llm' } }],
    read: (d) => Object.keys(d.providers.demo.models), want: ['echo-1', 'echo-2', 'echo-3'],
  },
  { name: 'a section added', edits: [{ path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }], read: (d) => d.alerts, want: { thresholds: { daily: [50, 100] } } },
  { name: 'a key removed', edits: [{ path: ['providers', 'demo', 'price'], value: undefined }], read: (d) => d.providers.demo.price, want: undefined },
  { name: 'a list set', edits: [{ path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }, { path: ['budgets', 'daily_usd'], value: 11 }], read: (d) => [d.alerts.thresholds.daily, d.budgets.daily_usd], want: [[50, 100], 11] },
];

t.test('a CRLF file: every line of the result ends CRLF, and it reads as the LF file edited the same way', async (t) => {
  for (const e of EDITS) {
    const out = applyEdits(CRLF, e.edits);
    t.equal(ends(out).bareLf, 0, `${e.name}: no LF without its CR`);
    t.equal(lf(out), applyEdits(TEXT, e.edits), `${e.name}: the same edit as in the LF file`);
    t.same(e.read(parse(out)), e.want, `${e.name}: reads as asked`);
    t.same(parse(out).providers.demo.name, 'The demo,\nanswered in process\n', `${e.name}: a block scalar reads the same`);
  }
  t.equal(applyEdits(CRLF, [{ path: ['budgets', 'daily_usd'], value: 10 }]), CRLF, 'the same value: the same bytes');
});

t.test('an LF file stays LF', async (t) => {
  for (const e of EDITS) t.equal(ends(applyEdits(TEXT, e.edits)).crlf, 0, e.name);
});

t.test('a byte order mark is kept, CRLF or LF, and none is added', async (t) => {
  for (const e of EDITS) {
    for (const base of [TEXT, CRLF]) {
      const out = applyEdits(`\uFEFF${base}`, e.edits);
      t.ok(out.startsWith('\uFEFF') && !out.startsWith('\uFEFF\uFEFF'), `${e.name}: one mark`);
      t.equal(out.slice(1), applyEdits(base, e.edits), `${e.name}: the rest as without it`);
    }
    t.notOk(applyEdits(TEXT, e.edits).startsWith('\uFEFF'), `${e.name}: none added`);
  }
});

t.test('a file with both line ends: written with the one most of its lines have', async (t) => {
  const lines = TEXT.split('\n').slice(0, -1);
  const mostlyCrlf = lines.map((l, i) => l + (i === 3 ? '\n' : '\r\n')).join('');
  const mostlyLf = lines.map((l, i) => l + (i === 3 ? '\r\n' : '\n')).join('');
  const half = `${lines.map((l, i) => l + (i % 2 === 0 ? '\r\n' : '\n')).join('')}${lines.length % 2 === 0 ? '' : '\n'}`;
  t.equal(ends(half).crlf, ends(half).bareLf, 'half and half');
  for (const e of EDITS) {
    t.equal(ends(applyEdits(mostlyCrlf, e.edits)).bareLf, 0, `${e.name}: mostly CRLF, all CRLF`);
    t.equal(ends(applyEdits(mostlyLf, e.edits)).crlf, 0, `${e.name}: mostly LF, all LF`);
    t.equal(ends(applyEdits(half, e.edits)).crlf, 0, `${e.name}: half and half, LF`);
  }
});

t.test('providers add: a CRLF file gets its block with CRLF, a byte order mark stays', async (t) => {
  const env = { OPENAI_API_KEY: 'sk-test-0123456789abcdef' };
  for (const bom of ['', '\uFEFF']) {
    const { text } = addProvider(bom + CRLF, { catalogId: 'openai', models: ['gpt-4o'] });
    t.equal(ends(text).bareLf, 0, 'no LF without its CR');
    t.equal(text.startsWith('\uFEFF'), bom !== '', 'the mark as it was');
    t.equal(lf(text).replace(/^\uFEFF/, ''), addProvider(TEXT, { catalogId: 'openai', models: ['gpt-4o'] }).text, 'the block the LF file gets');
    const cfg = parseConfigText(text, env);
    t.same(Object.keys(cfg.providers), ['demo', 'openai']);
    t.same(Object.keys(cfg.providers.openai!.models), ['gpt-4o']);
  }
  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `\uFEFF${CRLF}`);
  await addProviderToFile(file, { catalogId: 'openai', models: ['gpt-4o'] }, { write: () => {} });
  const bytes = readFileSync(file, 'utf8');
  t.same(ends(bytes), { crlf: ends(CRLF).crlf + 9, bareLf: 0 }, 'on disk: the block\'s 9 lines end CRLF too');
  t.ok(bytes.startsWith('\uFEFF'), 'on disk: the mark kept');
  t.same(Object.keys(parseConfigText(bytes, env).providers), ['demo', 'openai']);
});

t.test('a value that ends in a CR, before a CRLF: every edit and providers add keep it, in a CRLF file and an LF one', async (t) => {
  // `key: sk-1\r\r\n` reads as "sk-1\r" (the CR, then the line break); written with LF in place of that CRLF, the CR
  // and the LF read as one line break, and an edit of another key made it "sk-1" (and the name "Demo x").
  const withCr = (text: string, eol: string) =>
    text.replace(`    format: mock${eol}`, `    format: mock${eol}    key: sk-1\r\r\n    note: "Demo\r\r\n      x"${eol}`);
  for (const [form, base, eol] of [['CRLF', CRLF, '\r\n'], ['LF', TEXT, '\n']] as const) {
    const text = withCr(base, eol);
    const before = parse(text).providers.demo;
    t.same([before.key, before.note], ['sk-1\r', 'Demo\r x'], `${form}: the file reads so`);
    for (const e of EDITS) {
      const out = applyEdits(text, e.edits);
      const demo = parse(out).providers.demo ?? {};
      t.same([demo.key, demo.note], ['sk-1\r', 'Demo\r x'], `${form}, ${e.name}: the values other keys hold are kept`);
      t.same(e.read(parse(out)), e.want, `${form}, ${e.name}: reads as asked`);
      if (form === 'CRLF') t.equal(ends(out).bareLf, 0, `${form}, ${e.name}: no LF without its CR`);
    }
    const added = parse(addProvider(text, { catalogId: 'openai', models: ['gpt-4o'] }).text).providers;
    t.same([added.demo.key, added.demo.note, Object.keys(added)], ['sk-1\r', 'Demo\r x', ['demo', 'openai']], `${form}, providers add: kept`);
  }
});
