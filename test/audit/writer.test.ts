import { expect, test } from "bun:test";
import type { AuditRepository, AuditRow } from "../../src/audit/repository";
import { AUDIT_BATCH, AUDIT_QUEUE_MAX, createAuditWriter } from "../../src/audit/writer";
import { createLogger } from "../../src/observability/logger";

// The audit writer while the store refuses records and after it takes them again: what it keeps, what it drops and
// says it dropped, and that dropping at the limit is not paid by every request (it copied the whole queue per push).
const row = (n: number) => ({ id: String(n).padStart(8, "0") }) as AuditRow;

function refusingStore() {
  const written: AuditRow[] = [];
  let refusing = true;
  const repository: AuditRepository = {
    insertMany: async (rows) => {
      if (refusing) throw new Error("database is locked");
      written.push(...rows);
    },
    page: async () => [],
    deleteBefore: async () => 0,
    trimTo: async () => 0,
  };
  return { repository, written, recover: () => void (refusing = false) };
}

test("past its limit the writer drops the oldest records, says so, and writes the newest once the store takes them", async () => {
  const store = refusingStore();
  const lines: string[] = [];
  const writer = createAuditWriter(store.repository, createLogger({ level: "warn", write: (l) => lines.push(l) }));
  const pushed = AUDIT_QUEUE_MAX + 3 * AUDIT_BATCH;
  for (let n = 0; n < pushed; n++) writer.push(row(n));
  await writer.flush();
  expect(writer.pending()).toBeLessThanOrEqual(AUDIT_QUEUE_MAX);
  expect(writer.pending()).toBeGreaterThan(AUDIT_QUEUE_MAX - 2 * AUDIT_BATCH);
  const drops = lines.map((l) => JSON.parse(l) as { msg: string; dropped?: number }).filter((l) => l.dropped !== undefined);
  // Said in batches, not once a request: the count is the total dropped so far.
  expect(drops.length).toBeLessThanOrEqual(4);
  expect(drops.at(-1)!.dropped).toBe(pushed - writer.pending());

  store.recover();
  await writer.flush();
  expect(writer.pending()).toBe(0);
  // The newest are kept, in order, the last one pushed included.
  expect(store.written.at(-1)!.id).toBe(row(pushed - 1).id);
  expect(store.written[0]!.id).toBe(row(pushed - store.written.length).id);
});
