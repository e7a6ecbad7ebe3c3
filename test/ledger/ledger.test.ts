// The ledger hands each record to every sink, in order; a sink that throws is reported and breaks nothing.

import t from 'tap';
import { Ledger } from '../../src/ledger/ledger.js';
import { makeRecord, type UsageRecord } from '../../src/ledger/record.js';
import { NO_USAGE } from '../../src/ledger/types.js';

const r: UsageRecord = makeRecord({
  requestId: '018f7c1f-b1b8-7c06-9bf6-a0cf2144398c', startedAt: 0, endedAt: 5, endpoint: 'chat.completions', provider: 'mock', providerGroup: 'free',
  model: 'mock/echo-1', requestedModel: 'mock/echo-1', modelKnown: true, apiKeyName: 'anonymous', stream: false, status: 'success', httpStatus: 200,
  errorType: '', usage: { ...NO_USAGE, input: 1, output: 2 }, usageSource: 'reported', cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 5 }, upstreamMs: 4,
});

t.test('every sink gets the same record, in subscription order', async (t) => {
  const errors: unknown[] = [];
  const seen: [string, UsageRecord][] = [];
  const ledger = new Ledger((e) => errors.push(e));
  ledger.subscribe((x) => void seen.push(['rows', x]));
  ledger.subscribe((x) => void seen.push(['metrics', x]));
  ledger.publish(r);
  t.same(seen.map(([n]) => n), ['rows', 'metrics']);
  t.ok(seen.every(([, x]) => x === r), 'the very same object: the ledgers agree by construction');
  t.same(errors, []);
});

t.test('a throwing sink is reported and the others still run', async (t) => {
  const errors: unknown[] = [];
  const seen: string[] = [];
  const ledger = new Ledger((e) => errors.push(e));
  ledger.subscribe(() => void seen.push('first'));
  ledger.subscribe(() => {
    throw new Error('sink broke');
  });
  ledger.subscribe(() => void seen.push('third'));
  t.doesNotThrow(() => ledger.publish(r));
  t.doesNotThrow(() => ledger.publish(r));
  t.same(seen, ['first', 'third', 'first', 'third']);
  t.equal(errors.length, 2);
  t.equal((errors[0] as Error).message, 'sink broke');
});

t.test('no sinks: publishing is a no-op', async (t) => {
  const ledger = new Ledger(() => t.fail('no error expected'));
  t.doesNotThrow(() => ledger.publish(r));
});
