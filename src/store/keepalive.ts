// The keep-alive service's read of the record (src/services/keepalive.ts): a connection's recent upstream calls, from
// which the window rule is replayed at start.

import type { Store } from './client.js';
import { BILLED_KINDS, kindsSql, type RecordKind, type RequestStatus } from '../ledger/record.js';

/** A connection's upstream calls (not combo rows) since `from`, oldest first: start time, kind, status. */
export async function upstreamCallsSince(store: Store, providerId: string, connection: string, from: number): Promise<{ t: number; kind: RecordKind; status: RequestStatus }[]> {
  const rows = await store.query<{ t: string | number; kind: RecordKind; status: RequestStatus }>(
    `SELECT toUnixTimestamp64Milli(ts) AS t, kind, status FROM ${store.t('requests')}
     WHERE provider = {provider:String} AND connection = {connection:String} AND ${kindsSql(BILLED_KINDS)}
       AND ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
     ORDER BY ts`,
    { provider: providerId, connection, from },
  );
  return rows.map((r) => ({ t: Number(r.t), kind: r.kind, status: r.status }));
}
