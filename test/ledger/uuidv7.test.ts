// UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, RFC 4122 variant, random tail; ordered by time.

import t from 'tap';
import { uuidv7 } from '../../src/ledger/uuidv7.js';

const FORMAT = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const hex = (id: string) => id.replace(/-/g, '');
const msOf = (id: string) => parseInt(hex(id).slice(0, 12), 16);

t.test('format, version 7 and the RFC variant, across pool refills', async (t) => {
  const ids = Array.from({ length: 1000 }, () => uuidv7()); // > 256 per pool: crosses refills
  const bad = ids.filter((id) => !FORMAT.test(id));
  t.same(bad, [], 'every id is a lower-case 8-4-4-4-12 v7 UUID');
  for (const id of ids.slice(0, 5)) {
    const b = Buffer.from(hex(id), 'hex');
    t.equal(b.length, 16);
    t.equal(b[6]! >> 4, 7, 'version nibble is 7');
    t.equal(b[8]! >> 6, 0b10, 'variant bits are 10');
  }
});

t.test('the timestamp decodes back to the given milliseconds', async (t) => {
  for (const ms of [0, 1, 1_700_000_000_000, Date.UTC(2024, 4, 15, 12, 0, 0, 123), 2 ** 48 - 1]) {
    const id = uuidv7(ms);
    t.equal(msOf(id), ms, `${ms} -> ${id}`);
    t.match(id, FORMAT);
  }
  const before = Date.now();
  const id = uuidv7();
  const after = Date.now();
  t.ok(msOf(id) >= before && msOf(id) <= after, 'the default is now');
});

t.test('monotone by timestamp: later milliseconds sort later', async (t) => {
  const base = 1_715_774_400_000;
  const ids: string[] = [];
  for (let i = 0; i < 300; i++) ids.push(uuidv7(base + i * 7), uuidv7(base + i * 7 + 1));
  t.same([...ids].sort(), ids, 'string order equals time order');
  t.ok(uuidv7(base + 1) > uuidv7(base), 'one millisecond later is greater');
  t.ok(uuidv7(base + 256) > uuidv7(base + 255), 'across a byte carry');
  t.ok(uuidv7(2 ** 40) > uuidv7(2 ** 40 - 1), 'across a high byte carry');
});

t.test('unique and random within one millisecond', async (t) => {
  const ms = 1_715_774_400_000;
  const ids = Array.from({ length: 5000 }, () => uuidv7(ms));
  t.equal(new Set(ids).size, ids.length, '5000 ids in the same millisecond are all different');
  t.ok(ids.every((id) => msOf(id) === ms));
  const tails = new Set(ids.map((id) => hex(id).slice(16)));
  t.equal(tails.size, ids.length, 'the random tail differs');
  const firstRandNibbles = new Set(ids.map((id) => hex(id)[13]));
  t.equal(firstRandNibbles.size, 16, 'rand_a is random too');
});
