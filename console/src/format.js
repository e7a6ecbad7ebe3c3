// Numbers, money, durations and times as the console shows them.

const intFmt = new Intl.NumberFormat('en-US');

export const int = (n) => (n === null || n === undefined ? '–' : intFmt.format(n));

export function usd(v) {
  if (v === null || v === undefined) return '–';
  if (v === 0) return '$0.00';
  const abs = Math.abs(v);
  return `$${v.toFixed(abs < 0.01 ? 6 : abs < 1 ? 4 : 2)}`;
}

export const pct = (v) => (v === null || v === undefined ? '–' : `${Math.round(v * 10) / 10}%`);

export function seconds(s) {
  if (s === null || s === undefined) return '–';
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(s < 10 ? 2 : 1)} s`;
}

/** "2 d 4 h", "3 h 20 min", "4 min 05 s", "now". */
export function countdown(s) {
  if (s === null || s === undefined) return '–';
  if (s <= 0) return 'now';
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${String(m).padStart(2, '0')} min`;
  return `${m} min ${String(sec).padStart(2, '0')} s`;
}

export function time(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return d.toLocaleString('en-GB', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A `datetime-local` value as an ISO instant, or undefined. */
export const isoOf = (local) => (local ? new Date(local).toISOString() : undefined);

/** "26 Nov, " and "07:32:35" of an instant, for a cell that drops the day on a narrow screen. */
export function dayAndClock(iso) {
  const d = new Date(iso);
  return [
    `${d.toLocaleDateString('en-GB', { month: 'short', day: 'numeric' })}, `,
    d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' }),
  ];
}
