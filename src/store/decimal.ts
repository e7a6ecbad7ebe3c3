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
