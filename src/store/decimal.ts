// Exact sums of ClickHouse Decimal values read as text (`toString` of a Decimal(38, 12) sum): a read that returns
// partial sums (per hour, say) and is added up in the gateway stays as exact as a sum made in ClickHouse. The values
// are added as integers of 10^-12 (BigInt) and turned into a number once, from their decimal text.

const SCALE = 12;
const ZEROS = '0'.repeat(SCALE);

/** `text` (a decimal such as `12.5`, `-0.000001`, `3`) as an integer count of 10^-12; more digits are cut off. */
export function decimalUnits(text: string): bigint {
  const neg = text.startsWith('-');
  const body = neg || text.startsWith('+') ? text.slice(1) : text;
  const dot = body.indexOf('.');
  const int = dot === -1 ? body : body.slice(0, dot);
  const frac = dot === -1 ? '' : body.slice(dot + 1);
  if (!/^\d*$/.test(int) || !/^\d*$/.test(frac) || int.length + frac.length === 0) throw new Error(`not a decimal: '${text}'`);
  const units = BigInt((int || '0') + (frac + ZEROS).slice(0, SCALE));
  return neg ? -units : units;
}

/** An integer count of 10^-12 as decimal text (no trailing zeros). */
export function unitsText(units: bigint): string {
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString().padStart(SCALE + 1, '0');
  const int = digits.slice(0, -SCALE);
  const frac = digits.slice(-SCALE).replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

/** The number nearest to an integer count of 10^-12 (as `Number` of its decimal text: one rounding). */
export const unitsNumber = (units: bigint): number => Number(unitsText(units));

/** `x` as an integer count of 10^-12, read from its shortest decimal text (the text it was read from, when that had 15 significant digits or fewer). */
export function numberUnits(x: number): bigint {
  if (!Number.isFinite(x)) throw new Error(`not a finite amount: ${x}`);
  const s = String(x);
  const e = s.indexOf('e');
  if (e === -1) return decimalUnits(s);
  // 3e-7, -1.25e-10, 1e+21: the mantissa's digits with the point moved.
  const neg = s.startsWith('-');
  const [int, frac = ''] = s.slice(neg ? 1 : 0, e).split('.') as [string, string?];
  const digits = int + frac;
  const point = int.length + Number(s.slice(e + 1));
  const text =
    point <= 0 ? `0.${'0'.repeat(-point)}${digits}` : point >= digits.length ? digits + '0'.repeat(point - digits.length) : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return decimalUnits(neg ? `-${text}` : text);
}

/** `x` (USD) as an integer count of 10^-12, or null for an amount not read (NaN) or not finite. */
export const moneyUnits = (x: number): bigint | null => (Number.isFinite(x) ? numberUnits(x) : null);

/**
 * A sum of amounts (USD read from the store's exact Decimal sums, each a number) made exactly: each amount is made an
 * integer of 10^-12 once, the integers are added, and the total is turned into a number once, so 12344.8 + 0.5 is
 * 12345.3, not 12345.300000000001 as floats add it. The one exact summer of the read side: the analytics' and the
 * quota's loops keep one per figure (not `addMoney`, which made the running total decimal text again at each step)
 * and the calls not stored yet add their costs, kept as integers, to it (src/accounting/unstored.ts). The integers are
 * added as numbers while the total stays one a double holds exactly (2^53 units, about 9,007 USD), and carried into a
 * bigint past that (a bigint addition at every step took many times as long).
 */
export class MoneySum {
  #big = 0n;
  #small = 0;
  /** An amount not read (NaN, a sum the query did not ask for) makes the sum NaN, as float addition would. */
  #unknown = false;

  /** An amount in USD. */
  add(x: number): this {
    return this.addUnits(moneyUnits(x));
  }

  /** An amount already made units (`moneyUnits`: one conversion for several sums); null: not read. */
  addUnits(units: bigint | null): this {
    if (units === null) this.#unknown = true;
    else if (units <= SAFE_UNITS && units >= -SAFE_UNITS) this.addSmallUnits(Number(units));
    else this.#big += units;
    return this;
  }

  /** `x`: an integer count of 10^-12, at most 2^53 - 1 either way. */
  addSmallUnits(x: number): this {
    const t = this.#small + x;
    if (Math.abs(t) <= Number.MAX_SAFE_INTEGER) this.#small = t;
    else {
      this.#big += BigInt(this.#small);
      this.#small = x;
    }
    return this;
  }

  get value(): number {
    return this.#unknown ? NaN : unitsNumber(this.#big + BigInt(this.#small));
  }

  static of(values: Iterable<number>): number {
    const s = new MoneySum();
    for (const v of values) s.add(v);
    return s.value;
  }
}

const SAFE_UNITS = BigInt(Number.MAX_SAFE_INTEGER);
