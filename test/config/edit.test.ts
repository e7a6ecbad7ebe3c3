// Config file edits (src/config/edit.ts), pure: a scalar replaced in its source token leaves every other byte; keys
// added and removed keep the comments; ${VAR} values are found and refused; the ETag follows the bytes.

import t from 'tap';
import { applyEdits, envConflict, envFedPaths, etagOf } from '../../src/config/edit.js';

const TEXT = `# top comment
budgets:
  daily_usd: 10        # aligned comment
  monthly_usd: "\${MONTHLY:-200}"   # from env
providers:
  demo:
    price: { input: 1, output: 2 }   # flow map
    auth: { type: api_key, key: "\${DEMO_KEY}" }
    models:
      echo-1: { kind: llm }
`;

t.test('a scalar edit changes its bytes and nothing else, in block and flow maps', async (t) => {
  const out = applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: 12.5 }, { path: ['providers', 'demo', 'price', 'input'], value: 3 }]);
  t.equal(out, TEXT.replace('daily_usd: 10 ', 'daily_usd: 12.5 ').replace('{ input: 1,', '{ input: 3,'));
  t.equal(applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: 10 }]), TEXT, 'the same value: the same text');
});

t.test('keys added and removed keep every comment', async (t) => {
  const added = applyEdits(TEXT, [{ path: ['providers', 'demo', 'models', 'echo-1', 'price', 'output'], value: 4 }, { path: ['alerts', 'thresholds', 'daily'], value: [50, 100] }]);
  t.match(added, /echo-1: \{ kind: llm, price: \{ output: 4 \} \}/);
  t.match(added, /alerts:\n {2}thresholds:\n {4}daily: \[ 50, 100 \]\n/);
  for (const c of ['# top comment', '# aligned comment', '# from env', '# flow map']) t.ok(added.includes(c), c);
  const removed = applyEdits(TEXT, [{ path: ['budgets', 'daily_usd'], value: undefined }]);
  t.notMatch(removed, /daily_usd/);
  t.match(removed, /monthly_usd: "\$\{MONTHLY:-200\}" # from env/);
  const emptied = applyEdits('a: 1\nbudgets:\n  daily_usd: 3\n', [{ path: ['budgets', 'daily_usd'], value: undefined }]);
  t.equal(emptied, 'a: 1\n', 'a map left empty goes too');
  t.equal(applyEdits(TEXT, [{ path: ['budgets', 'nothing'], value: undefined }]), TEXT, 'removing what is not there changes nothing');
});

t.test('${VAR} values: listed, and an edit on or under one is a conflict', async (t) => {
  t.same(envFedPaths(TEXT), ['budgets.monthly_usd', 'providers.demo.auth.key']);
  t.equal(envConflict(TEXT, [{ path: ['budgets', 'monthly_usd'], value: 1 }]), 'budgets.monthly_usd');
  t.equal(envConflict(TEXT, [{ path: ['providers', 'demo', 'auth'], value: undefined }]), 'providers.demo.auth.key', 'removing the map above it');
  t.equal(envConflict(TEXT, [{ path: ['budgets', 'daily_usd'], value: 1 }]), null);
});

t.test('the ETag is a strong tag of the bytes', async (t) => {
  t.match(etagOf(TEXT), /^"[A-Za-z0-9_-]{32}"$/);
  t.equal(etagOf(TEXT), etagOf(`${TEXT}`));
  t.not(etagOf(TEXT), etagOf(`${TEXT} `));
});
