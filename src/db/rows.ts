import { is, Param, Placeholder, sql } from "drizzle-orm";

/**
 * Multi-row inserts prepared once (Store.prepareRows): a statement for ROWS_PER_STATEMENT rows and one for a single
 * row. A batch of records then costs one statement run per hundred rows instead of one per row — on SQLite half the
 * database's time per row, and none of Drizzle's per-run placeholder filling (bench/RESULTS.md, "Proxy hot path").
 */
export const ROWS_PER_STATEMENT = 100;

/** The builder of an insert of `count` rows whose values are `rowPlaceholders(columns, count)`. */
export type RowsQuery = (count: number) => { prepare(name?: string): unknown; toSQL(): { sql: string; params: unknown[] } };

const name = (column: string, row: number) => `${column}.${row}`;

/**
 * `count` rows of placeholders, one per column, named for their row: the values of a RowsQuery's insert. Typed per
 * column, so an insert's `.values()` takes them as they are and the compiler checks that no required column is missing.
 */
export const rowPlaceholders = <C extends string>(columns: readonly C[], count: number): Record<C, Placeholder>[] =>
  Array.from({ length: count }, (_, row) => {
    const values = {} as Record<C, Placeholder>;
    for (const column of columns) values[column] = sql.placeholder(name(column, row));
    return values;
  });

/** Named parameters for a prepared RowsQuery of `count` rows: the rows from `offset` on, keys suffixed by row. */
export function namedParams(rows: Record<string, unknown>[], offset: number, count: number): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (let row = 0; row < count; row++) {
    const values = rows[offset + row]!;
    for (const column in values) params[name(column, row)] = values[column] ?? null;
  }
  return params;
}

type Slot = { constant: unknown } | { column: string; row: number; encode?: (value: unknown) => unknown };

/**
 * Positional values for a statement compiled from a RowsQuery (its `toSQL()` params), computed once per statement:
 * each placeholder's row and column, and its column's encoder (what Drizzle would apply when it fills placeholders).
 */
export function positionalParams(params: unknown[]): (rows: Record<string, unknown>[], offset: number) => unknown[] {
  const slots: Slot[] = params.map((p) => {
    const placeholder = is(p, Placeholder) ? p : is(p, Param) && is(p.value, Placeholder) ? (p.value as Placeholder) : undefined;
    if (!placeholder) return { constant: p };
    const dot = placeholder.name.lastIndexOf(".");
    const column = placeholder.name.slice(0, dot);
    const encoder = is(p, Param) ? p.encoder : undefined;
    return {
      column,
      row: Number(placeholder.name.slice(dot + 1)),
      ...(encoder && { encode: (value: unknown) => encoder.mapToDriverValue(value) }),
    };
  });
  return (rows, offset) =>
    slots.map((slot) => {
      if ("constant" in slot) return slot.constant;
      const value = rows[offset + slot.row]![slot.column] ?? null;
      return value === null || !slot.encode ? value : slot.encode(value);
    });
}
