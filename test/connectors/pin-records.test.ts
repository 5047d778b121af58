import { expect, test } from "bun:test";
import { createPinRecords } from "../../src/connectors/pin-records";
import type { ConnectorRepository, ConnectorRow } from "../../src/connectors/repository";
import { createLogger } from "../../src/observability/logger";

// The order of tool-pin writes: a client walks a listing's pages in order and the first whole walk is the approved
// baseline, so a later page written before an earlier one would make the earlier page's tools look new. The store
// here answers each write after a delay the test chooses, so a later write could overtake an earlier one.
function recorder(delays: Record<string, number>, failing: string[] = []) {
  const events: string[] = [];
  const lines: string[] = [];
  const connectors: Pick<ConnectorRepository, "toolPins" | "recordToolPins"> = {
    toolPins: async () => [],
    async recordToolPins(connectorId, seen) {
      const page = seen[0]!.name;
      events.push(`start ${connectorId} ${page}`);
      await Bun.sleep(delays[page] ?? 0);
      events.push(`end ${connectorId} ${page}`);
      if (failing.includes(page)) throw new Error(`the store refused ${page}`);
      return undefined;
    },
  };
  const pins = createPinRecords({
    connectorRows: connectors,
    clock: () => 0,
    log: createLogger({ level: "debug", write: (line) => lines.push(line) }),
  });
  const row = (id: string) => ({ id, owner_id: "u" }) as ConnectorRow;
  const record = (id: string, page: string, complete = false) =>
    pins.record(row(id), [{ name: page, digest: "d", definition: { name: page } }], complete);
  return { events, lines, record };
}

test("one connector's listings are written in the order they were answered, each once the one before is done", async () => {
  const r = recorder({ "page-1": 30, "page-2": 0 });
  await Promise.all([r.record("a", "page-1"), r.record("a", "page-2", true)]);
  expect(r.events).toEqual(["start a page-1", "end a page-1", "start a page-2", "end a page-2"]);
});

test("another connector's listing does not wait for them", async () => {
  const r = recorder({ "page-1": 30, other: 0 });
  await Promise.all([r.record("a", "page-1"), r.record("b", "other")]);
  expect(r.events).toEqual(["start a page-1", "start b other", "end b other", "end a page-1"]);
});

test("a write the store refuses is logged, and the next one still runs", async () => {
  const r = recorder({}, ["page-1"]);
  await Promise.all([r.record("a", "page-1"), r.record("a", "page-2")]);
  expect(r.events).toEqual(["start a page-1", "end a page-1", "start a page-2", "end a page-2"]);
  expect(r.lines.map((line) => JSON.parse(line))).toEqual([
    expect.objectContaining({
      level: "warn",
      msg: "could not record tool pins",
      connector_id: "a",
      error: "the store refused page-1",
    }),
  ]);
});
