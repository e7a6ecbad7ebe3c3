// From a review of /api/live's input estimate: the in-flight tokens gauge (read by every /metrics scrape) went
// through progressOf, which worked out the input estimate of every request in flight, so the first scrape after a
// 90 MB request walked its whole body on the main thread (about a second), with no /api/live reader at all. The
// estimate is now worked out only when `estimatedInput` is read (the live list's cost), once per request.

import t from 'tap';
import { SentInput, newOutcome, progressOf } from '../../src/pipeline/outcome.js';
import { resolveModel } from '../../src/routing/resolve.js';
import { DEMO_PROVIDER, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

t.test('streamedTokens alone reads no request; estimatedInput estimates it once', async (t) => {
  const cfg = testConfig({ providers: { demo: DEMO_PROVIDER } }, tempDir(t));
  let reads = 0;
  const outcome = newOutcome({ chars: 40, expected: 100 });
  outcome.route = resolveModel(cfg, 'demo/echo-1');
  outcome.sent = new SentInput(() => {
    reads++;
    return { chat: { model: 'demo/echo-1', messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(40) }] } };
  });
  for (let i = 0; i < 3; i++) t.equal(progressOf(outcome).streamedTokens, 10, 'the gauge\'s figure');
  t.equal(reads, 0, 'the gauge read no request');
  const p = progressOf(outcome);
  const input = p.estimatedInput;
  t.ok(input !== null && input > 100, `the live list's estimate: ${input}`);
  t.equal(progressOf(outcome).estimatedInput, input, 'the same estimate again');
  t.equal(reads, 1, 'the request was read once');
});
