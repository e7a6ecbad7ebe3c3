// The test processes run their TypeScript with tsx alone (package.json, `tap`; docs/development.md, "How the
// TypeScript runs"). A process that also carries @tapjs/typescript's loader (ts-node) is what the first run after a
// fresh install had, before scripts/tap-plugins.mjs built tap's plugins ahead of the run: the suite took 1.7x as long.

import t from 'tap';

t.test('this test process loads tsx, and not @tapjs/typescript (ts-node)', async (t) => {
  t.ok(process.execArgv.includes('--import=tsx'), `tsx is among the loaders: ${process.execArgv.join(' ')}`);
  t.notOk(process.execArgv.some((a) => a.includes('@tapjs/typescript')), `no ts-node loader: ${process.execArgv.join(' ')}`);
});
