// Which of ClickHouse's refusals of an insert are about the rows themselves (the batch writer sets those rows aside,
// writer.ts) rather than a store that fails (retried).

// ClickHouse answered and refused the rows themselves: the same rows can never succeed, however often they are sent.
// NO_SUCH_COLUMN_IN_TABLE and DUPLICATE_COLUMN (both store paths' names for an insert naming a column the table lacks,
// or one twice) refuse a segment's header, its own data: the table has every column this version writes (its
// migrations run at open), so only a damaged header, or one a newer version wrote, names another. A store that fails
// (a connection refused, a timeout, UNKNOWN_TABLE, a disk full, too many parts) is never one of these.
const ROW_ERRORS = /^(CANNOT_PARSE\w*|INCORRECT_DATA|INCORRECT_JSON\w*|TYPE_MISMATCH|CANNOT_CONVERT_TYPE|ILLEGAL_COLUMN|VALUE_IS_OUT_OF_RANGE\w*|ARGUMENT_OUT_OF_BOUND|TOO_LARGE_STRING_SIZE|CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN|UNKNOWN_FIELD\w*|CANNOT_READ_ALL_DATA|NO_SUCH_COLUMN_IN_TABLE|DUPLICATE_COLUMN)$/;

// ROW_ERRORS by number (test/store/spool-damage.test.ts checks each with the engine's errorCodeToName). The client
// reads the name out of the message, which for an unparsable row lists its columns' types: it took `UUID` for the
// name, and one such row, retried as the store failing, held back every row after it for good.
export const ROW_ERROR_CODES: ReadonlySet<number> = new Set([6, 15, 16, 26, 27, 33, 38, 41, 44, 53, 69, 70, 72, 117, 131, 321, 349, 376]);
const COLUMN_ERROR_CODES: ReadonlySet<number> = new Set([15, 16]);

/**
 * Did ClickHouse refuse the data (rather than fail to take it)? Both clients carry its error name in `type` and its
 * number in `code`; either says so. With `columns`: did it refuse the columns the insert names (a segment's header),
 * before reading any row? Then no row of it can be put in its columns by name (parseRows' `unmapped`).
 */
export function isRowError(err: unknown, columns = false): boolean {
  const e = err as { type?: unknown; code?: unknown } | null;
  const type = e?.type;
  if (typeof type === 'string' && (columns ? /^(NO_SUCH_COLUMN_IN_TABLE|DUPLICATE_COLUMN)$/ : ROW_ERRORS).test(type)) return true;
  // Only ClickHouse's own errors carry a number as a string; a connection's `code` (ECONNREFUSED) is no number.
  return typeof e?.code === 'string' && (columns ? COLUMN_ERROR_CODES : ROW_ERROR_CODES).has(Number(e.code));
}
