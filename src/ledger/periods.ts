// Reporting periods for /api/usage, in UTC. Calendar periods start at a UTC boundary; rolling ones end now.
// `date` is the calendar day the report is about: the period's first day for yesterday, today's date otherwise.

import { DAY_MS } from '../core/windows.js';

export const PERIODS = ['today', 'yesterday', '24h', 'week', '7d', 'month', '30d'] as const;
export type Period = (typeof PERIODS)[number];

export interface Window {
  readonly period: Period;
  readonly from: number;
  readonly to: number;
  readonly date: string;
}

export function isPeriod(s: string): s is Period {
  return (PERIODS as readonly string[]).includes(s);
}

function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * Where a read of window `w` ends (exclusive): a window that ends now takes the request started this very millisecond
 * (`to + 1`); yesterday ends at today's midnight, exclusive, so a request started at 00:00:00.000 is today's only (read
 * to `to + 1`, it was in yesterday's figures and today's both).
 */
export function readEnd(w: Window): number {
  return w.period === 'yesterday' ? w.to : w.to + 1;
}

export function periodWindow(period: Period, now: number): Window {
  const today = startOfUtcDay(now);
  const d = new Date(today);
  switch (period) {
    case 'today':
      return { period, from: today, to: now, date: isoDate(today) };
    case 'yesterday':
      return { period, from: today - DAY_MS, to: today, date: isoDate(today - DAY_MS) };
    case '24h':
      return { period, from: now - DAY_MS, to: now, date: isoDate(today) };
    case 'week': {
      const sinceMonday = (d.getUTCDay() + 6) % 7;
      return { period, from: today - sinceMonday * DAY_MS, to: now, date: isoDate(today) };
    }
    case '7d':
      return { period, from: now - 7 * DAY_MS, to: now, date: isoDate(today) };
    case 'month':
      return { period, from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), to: now, date: isoDate(today) };
    case '30d':
      return { period, from: now - 30 * DAY_MS, to: now, date: isoDate(today) };
  }
}
