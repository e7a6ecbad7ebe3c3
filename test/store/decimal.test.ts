// Exact money sums in the gateway (src/store/decimal.ts): partial sums read from ClickHouse as decimal text and added
// here give what one sum in ClickHouse gives, where adding them as numbers would not.

import t from 'tap';
import fc from 'fast-check';
import { decimalUnits, unitsNumber, unitsText } from '../../src/store/decimal.js';

t.test('decimal text to units and back', async (t) => {
  t.equal(decimalUnits('0.1'), 100_000_000_000n);
  t.equal(decimalUnits('12'), 12_000_000_000_000n);
  t.equal(decimalUnits('-0.000000000001'), -1n);
  t.equal(decimalUnits('3.1234567890129'), 3_123_456_789_012n, 'digits past the 12th are cut');
  t.equal(unitsText(100_000_000_000n + 200_000_000_000n), '0.3', 'no trailing zeros');
  t.equal(unitsText(-1n), '-0.000000000001');
  t.equal(unitsText(0n), '0');
  t.equal(unitsNumber(decimalUnits('0.1') + decimalUnits('0.2')), 0.3, 'where 0.1 + 0.2 as numbers is not 0.3');
  for (const bad of ['', '.', 'abc', '1e5', '1.2.3', '--1']) t.throws(() => decimalUnits(bad), `'${bad}' is not a decimal`);
});

t.test('a sum of parts is the sum of the whole, to the last digit', async (t) => {
  // Integers of 10^-12 as the reference: the text of each part, summed through units, gives the text of the sum.
  const units = fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n });
  fc.assert(
    fc.property(fc.array(units, { maxLength: 60 }), (parts) => {
      const whole = parts.reduce((s, u) => s + u, 0n);
      const summed = parts.map((u) => decimalUnits(unitsText(u))).reduce((s, u) => s + u, 0n);
      return summed === whole && unitsText(summed) === unitsText(whole) && decimalUnits(unitsText(whole)) === whole;
    }),
    { numRuns: 500 },
  );
});
