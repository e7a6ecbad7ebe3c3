// The usage record and the bucket arithmetic it is built from (DESIGN.md decision 4).

import t from 'tap';
import { makeRecord, overheadMs, ttftMs, type RecordInput } from '../../src/ledger/record.js';
import { BUCKETS, NO_USAGE, inputSide, outputSide, totalTokens, type Usage } from '../../src/ledger/types.js';

function input(over: Partial<RecordInput> = {}): RecordInput {
  return {
    requestId: '018f7c1f-b1b8-7c06-9bf6-a0cf2144398c', startedAt: 1_715_774_400_000, endedAt: 1_715_774_400_250,
    endpoint: 'chat.completions', provider: 'openai', providerGroup: 'paid', model: 'openai/gpt-4o', requestedModel: 'openai/gpt-4o',
    modelKnown: true, apiKeyName: 'admin', stream: true, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 8, cached: 3, cacheWrite: null, output: 5, reasoning: 2 }, usageSource: 'reported',
    cost: { cost: 0.00009375, listCost: 0.00009375 }, latency: { kind: 'stream', ttftMs: 40, totalMs: 250 }, upstreamMs: 230,
    ...over,
  };
}

t.test('totals: null buckets count as zero, nothing is counted twice', async (t) => {
  const u: Usage = { input: 8, cached: 3, cacheWrite: 4, output: 5, reasoning: 2 };
  t.equal(totalTokens(u), 22);
  t.equal(inputSide(u), 15, 'input side: uncached + cached + cache write');
  t.equal(outputSide(u), 7, 'output side: output + reasoning');
  t.equal(inputSide(u) + outputSide(u), totalTokens(u), 'the two sides make the total');
  t.equal(totalTokens(NO_USAGE), 0);
  t.equal(inputSide(NO_USAGE), 0);
  t.equal(outputSide(NO_USAGE), 0);
  t.equal(totalTokens({ ...NO_USAGE, reasoning: 9 }), 9);
  t.equal(inputSide({ ...NO_USAGE, cached: 5 }), 5);
  t.equal(outputSide({ ...NO_USAGE, output: 0, reasoning: null }), 0);
  t.same(NO_USAGE, { input: null, cached: null, cacheWrite: null, output: null, reasoning: null }, 'not reported is null, not 0');
  t.ok(Object.isFrozen(NO_USAGE));
  t.same([...BUCKETS], ['input', 'cached', 'cacheWrite', 'output', 'reasoning']);
});

t.test('makeRecord derives the total and freezes the record', async (t) => {
  const i = input();
  const r = makeRecord(i);
  t.equal(r.totalTokens, 18);
  t.ok(Object.isFrozen(r));
  const routing = { kind: 'request', parentId: '', combo: '', attempt: 0, connection: '', autoSwitched: false, traceId: '', dispatched: true };
  t.same({ ...r, totalTokens: undefined }, { ...routing, ...i, totalTokens: undefined }, 'everything else is carried unchanged; routing fields default to a direct request');
  const attempt = makeRecord({ ...i, kind: 'attempt', parentId: 'p', combo: 'smart', attempt: 2, connection: 'eu', autoSwitched: true });
  t.same([attempt.kind, attempt.parentId, attempt.combo, attempt.attempt, attempt.connection, attempt.autoSwitched], ['attempt', 'p', 'smart', 2, 'eu', true], 'given routing fields are kept');
  t.notOk('totalTokens' in i, 'the input is not modified');
  t.equal(makeRecord(input({ usage: NO_USAGE, usageSource: 'none' })).totalTokens, 0);
  t.equal(makeRecord(input({ usage: { ...NO_USAGE, output: 3 }, usageSource: 'estimated' })).totalTokens, 3);
  t.throws(() => {
    (r as { totalTokens: number }).totalTokens = 1;
  }, TypeError, 'cannot be changed afterwards');
});

t.test('overheadMs is total minus upstream, never negative', async (t) => {
  t.equal(overheadMs(makeRecord(input())), 20);
  t.equal(overheadMs(makeRecord(input({ upstreamMs: null }))), 250, 'no upstream call: all of it is overhead');
  t.equal(overheadMs(makeRecord(input({ upstreamMs: 250 }))), 0);
  t.equal(overheadMs(makeRecord(input({ upstreamMs: 251.5 }))), 0, 'clock skew cannot make it negative');
  t.equal(overheadMs(makeRecord(input({ latency: { kind: 'unary', totalMs: 100.5 }, upstreamMs: 100 }))), 0.5);
});

t.test('ttftMs only for streams', async (t) => {
  t.equal(ttftMs(makeRecord(input())), 40);
  t.equal(ttftMs(makeRecord(input({ latency: { kind: 'stream', ttftMs: null, totalMs: 250 } }))), null, 'a stream that never produced a token');
  t.equal(ttftMs(makeRecord(input({ stream: false, latency: { kind: 'unary', totalMs: 250 } }))), null, 'unary');
});
