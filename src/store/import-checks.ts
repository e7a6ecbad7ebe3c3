// What an imported row may hold (docs/security.md, "Export and import"): the values the gateway itself writes. The
// archive's rows are checked in their staging tables, one read per table, before any row reaches the live tables:
// budgets, quotas and analytics are sums of `requests`, so a row with a negative cost (or a token count, a kind, a
// status the gateway never writes, a timestamp years ahead) from an edited or damaged archive would lower a budget's
// spend, a quota's count or a report, or hide rows from the time-bounded reads.
//
// A negative token count cannot sit in the unsigned columns: the staging insert converts it, and -1000 reads as
// 2^64 - 1000. So a count is negative when read as the signed integer of its width (toInt64 of a UInt64 column).
// Values that existed before are accepted: '' where a column was added later with that default (price_source,
// service_tier, provider_group of a request that reached no provider), `kind` 'request' for archives before it.

import { PROVIDER_GROUPS } from '../config/types.js';
import { RECORD_KINDS, REQUEST_STATUSES } from '../ledger/record.js';
import { USAGE_SOURCES } from '../ledger/types.js';
import { ident, sqlString } from './client.js';

/** A staged table's rows are refused past the import's time plus this (a clock a little ahead of the importer's). */
export const FUTURE_ALLOWANCE_MS = 24 * 3_600_000;

/**
 * The alert kinds and severities the gateway writes (src/alerts/types.ts: ALERT_KINDS plus auto_switch and test;
 * Severity). The store cannot import the alerts folder (it sits below it); test/api/admin-import-values.test.ts keeps
 * the lists equal.
 */
export const ALERT_ROW_KINDS = [
  'quota_warning', 'quota_exhausted', 'quota_reset', 'daily_budget', 'monthly_budget', 'cost_anomaly', 'exhaustion_pattern', 'auto_switch', 'test',
] as const;
export const ALERT_SEVERITIES = ['info', 'warning', 'critical'] as const;

/** One rule of a table: `broken` is a SQL condition on a staged row, true when the row breaks it. */
export interface RowRule {
  /** What a row that breaks it has, as a message says it after "rows have": `a negative cost`. */
  readonly what: string;
  readonly broken: string;
}

/** The latest instant a row may carry, as SQL (`now` is the import's time, epoch ms). */
const latest = (now: number): string => `fromUnixTimestamp64Milli(toInt64(${Math.trunc(now + FUTURE_ALLOWANCE_MS)}), 'UTC')`;

const NIL_UUID = "toUUID('00000000-0000-0000-0000-000000000000')";
const emptyId = (column: string): RowRule => ({ what: `an empty ${column} (the nil UUID)`, broken: `${ident(column)} = ${NIL_UUID}` });
const negativeMoney = (column: string): RowRule => ({ what: `a negative ${column}`, broken: `${ident(column)} < 0` });
/** `bits`: the column's width (UInt64 or UInt32); a NULL (not reported) breaks nothing. */
const negativeCount = (column: string, bits: 32 | 64): RowRule => ({
  what: `a negative ${column} (a count of 2^${bits - 1} or more: how a negative number reads in this unsigned column)`,
  broken: `toInt${bits}(${ident(column)}) < 0`,
});
/**
 * A count of 2^32 or more: the gateway believes at most 20,000,000 tokens of one call's bucket (MAX_CALL_TOKENS) and
 * a combo row sums its attempts, so no row it writes comes near; and the reads sum these columns in UInt64, where rows
 * each below 2^63 (so not "negative") could together wrap past 2^64 and lower a quota's count.
 */
const hugeCount = (column: string): RowRule => ({
  what: `${/^[aeiou]/.test(column) ? 'an' : 'a'} ${column} of 2^32 or more (more than any call counts)`,
  broken: `toInt64(ifNull(${ident(column)}, 0)) >= 4294967296`,
});
/** total_tokens is the sum of the five buckets in every row the gateway writes (src/ledger/types.ts, totalTokens). */
const TOTAL_OF_BUCKETS = ['input_tokens', 'cached_tokens', 'cache_write_tokens', 'output_tokens', 'reasoning_tokens'].map((c) => `toUInt128(ifNull(${ident(c)}, 0))`).join(' + ');
const badDuration = (column: string): RowRule => ({ what: `a negative or non-finite ${column}`, broken: `NOT isFinite(${ident(column)}) OR ${ident(column)} < 0` });
const notOneOf = (column: string, values: readonly string[]): RowRule => ({
  what: `a ${column} the gateway does not write (not one of ${values.map((v) => (v === '' ? "''" : v)).join(', ')})`,
  broken: `${ident(column)} NOT IN (${values.map(sqlString).join(', ')})`,
});
const future = (column: string, now: number): RowRule => ({
  what: `${/^[aeiou]/.test(column) ? 'an' : 'a'} ${column} more than a day after the import's time`,
  broken: `${ident(column)} > ${latest(now)}`,
});

const UINT64_COUNTS = ['input_tokens', 'cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'output_tokens', 'reasoning_tokens', 'total_tokens'];
const UINT32_COUNTS = ['audio_input_tokens', 'audio_output_tokens', 'web_search_requests'];

/** The rules of each table an archive holds, for an import at `now` (epoch ms). */
export function rowRules(now: number): Readonly<Record<string, readonly RowRule[]>> {
  return {
    requests: [
      emptyId('request_id'),
      notOneOf('kind', RECORD_KINDS),
      notOneOf('status', REQUEST_STATUSES),
      notOneOf('usage_source', USAGE_SOURCES),
      notOneOf('provider_group', ['', ...PROVIDER_GROUPS]),
      {
        what: "a price_source the gateway does not write (not one of config, catalog@<version>, genai-prices@<version>, none, '')",
        broken: "price_source NOT IN ('', 'config', 'none') AND NOT startsWith(price_source, 'catalog@') AND NOT startsWith(price_source, 'genai-prices@')",
      },
      ...UINT64_COUNTS.map((c) => negativeCount(c, 64)),
      ...UINT32_COUNTS.map((c) => negativeCount(c, 32)),
      ...UINT64_COUNTS.map(hugeCount),
      { what: 'a total_tokens that is not the sum of the five token buckets', broken: `toUInt128(total_tokens) != ${TOTAL_OF_BUCKETS}` },
      negativeMoney('cost'),
      negativeMoney('list_cost'),
      ...['duration_ms', 'ttft_ms', 'upstream_ms'].map(badDuration),
      future('ts', now),
      future('end_ts', now),
    ],
    alerts: [
      emptyId('id'),
      notOneOf('kind', ALERT_ROW_KINDS),
      notOneOf('severity', ALERT_SEVERITIES),
      { what: 'a non-finite threshold', broken: 'NOT isFinite(threshold)' },
      future('fired_at', now),
      // the version is the time of the write in microseconds (src/alerts/service.ts): one from the future would
      // outrank every later version of the alert (marking it read)
      { what: "a version more than a day after the import's time (versions are microseconds of the write)", broken: `version > ${Math.trunc(now + FUTURE_ALLOWANCE_MS) * 1000}` },
      { what: 'a data column that is not JSON', broken: 'NOT isValidJSON(data)' },
    ],
    alert_deliveries: [emptyId('alert_id'), future('ts', now)],
  };
}

/** A staged table, as the checks read it: how many of its rows meet each condition, in one read. */
export interface Countable {
  readonly table: string;
  count(conditions: readonly string[]): Promise<number[]>;
}

/**
 * What breaks the rules in `staged` (one read), in the archive's terms: `3 rows have a negative cost`, one entry per
 * rule broken; none for a table without rules.
 */
export async function ruleBreaches(staged: Countable, now: number): Promise<string[]> {
  const rules = rowRules(now)[staged.table] ?? [];
  if (rules.length === 0) return [];
  const counts = await staged.count(rules.map((r) => r.broken));
  return rules.flatMap((r, i) => (counts[i]! > 0 ? [`${counts[i]} ${counts[i] === 1 ? 'row has' : 'rows have'} ${r.what}`] : []));
}
