import type { AuditRecord } from "./model";
import { AUDIT_COLUMNS } from "./repository";

/** The columns of an exported record: the stored columns, in their order (`captured` as its JSON text). */
export const EXPORT_COLUMNS = AUDIT_COLUMNS satisfies readonly (keyof AuditRecord)[];

/**
 * One CSV field ([RFC 4180 §2](https://www.rfc-editor.org/rfc/rfc4180#section-2): quoted when it holds a comma,
 * quote or line break; quotes doubled). A text that a spreadsheet would run as a formula (it starts with = + - @, a
 * tab or a carriage return: OWASP "CSV Injection") gets a leading ' — the records hold what clients and servers
 * sent, which an attacker chooses.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvHeader = () => `${EXPORT_COLUMNS.join(",")}\r\n`;
export const csvLine = (record: AuditRecord) => `${EXPORT_COLUMNS.map((c) => csvField(record[c])).join(",")}\r\n`;
export const ndjsonLine = (record: AuditRecord) => `${JSON.stringify(record)}\n`;
