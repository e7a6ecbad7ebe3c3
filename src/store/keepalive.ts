// The keep-alive service's read of the record (src/services/keepalive.ts): connections' recent upstream calls, from
// which the window rule is replayed at start and before a ping.

import type { Store } from './client.js';
import { BILLED_KINDS, kindsSql, type RecordKind, type RequestStatus } from '../ledger/record.js';

/** One upstream call as the window rule reads it: start time, kind, status. */
export interface UpstreamCall {
  readonly t: number;
  readonly kind: RecordKind;
  readonly status: RequestStatus;
  /** It went out upstream (a row written before migration 28 did, as the column's default says). */
  readonly dispatched: boolean;
}

/** A connection of a provider, and from when its calls are read. */
export interface CallsWanted {
  readonly provider: string;
  readonly connection: string;
  readonly from: number;
}

const callsKey = (provider: string, connection: string): string => `${provider}\u0000${connection}`;

/**
 * Every wanted connection's calls (not combo rows; each says whether it went out: a ping that did not still counts
 * as a try, keepalive-window.ts) since its own `from`, oldest first, in `wanted`'s order:
 * one read for all (a start with thousands of keep-alive connections made a query each: 2,000 took 5 s, and the
 * alerts started after them).
 */
export async function callsOfConnections(store: Store, wanted: readonly CallsWanted[]): Promise<UpstreamCall[][]> {
  const out = new Map<string, UpstreamCall[]>(wanted.map((w) => [callsKey(w.provider, w.connection), []]));
  if (wanted.length === 0) return [];
  const from = new Map(wanted.map((w) => [callsKey(w.provider, w.connection), w.from]));
  const rows = await store.query<{ provider: string; connection: string; t: string | number; kind: RecordKind; status: RequestStatus; dispatched: boolean | number }>(
    `SELECT provider, connection, toUnixTimestamp64Milli(ts) AS t, kind, status, dispatched FROM ${store.t('requests')}
     WHERE provider IN {providers:Array(String)} AND connection IN {connections:Array(String)}
       AND has(arrayZip({providers:Array(String)}, {connections:Array(String)}), (provider, connection)) AND ${kindsSql(BILLED_KINDS)}
       AND ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
     ORDER BY ts`,
    { providers: wanted.map((w) => w.provider), connections: wanted.map((w) => w.connection), from: Math.min(...wanted.map((w) => w.from)) },
  );
  for (const r of rows) {
    const key = callsKey(r.provider, r.connection);
    const t = Number(r.t);
    if (t >= from.get(key)!) out.get(key)!.push({ t, kind: r.kind, status: r.status, dispatched: r.dispatched === true || r.dispatched === 1 });
  }
  return wanted.map((w) => out.get(callsKey(w.provider, w.connection))!);
}
