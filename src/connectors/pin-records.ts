import type { Logger } from "../observability/logger";
import type { SeenTool } from "./model";
import type { ConnectorRepository, ConnectorRow } from "./repository";

export type PinRecordsDeps = {
  connectorRows: Pick<ConnectorRepository, "toolPins" | "recordToolPins">;
  clock: () => number;
  log: Logger;
};

/**
 * A connector's tool pins as the proxy reads and records them (proxy/tool-pins.ts compares them). A listing's tools
 * are recorded off the request, and one connector's listings in the order they were answered: a client walks the
 * pages in order, and the first whole walk is the approved baseline, so each write waits for the one before.
 */
export function createPinRecords({ connectorRows: rows, clock, log }: PinRecordsDeps) {
  const writes = new Map<string, Promise<void>>();

  /** Records a listing's tool pins (repository.ts) and says in the log what differs from the approved. */
  async function write(row: ConnectorRow, seen: SeenTool[], complete: boolean): Promise<void> {
    try {
      const changed = await rows.recordToolPins(row.id, seen, complete, clock());
      const changes = changed?.tool_changes ?? [];
      if (changes.length > 0) {
        log.warn("tool definitions differ from the approved ones", {
          connector_id: row.id,
          owner_id: row.owner_id,
          tools: changes.map((c) => `${c.name} (${c.change})`),
        });
      }
    } catch (e) {
      log.warn("could not record tool pins", { connector_id: row.id, error: (e as Error).message });
    }
  }

  return {
    list: (connectorId: string) => rows.toolPins(connectorId),
    record(row: ConnectorRow, seen: SeenTool[], complete: boolean): Promise<void> {
      const next = (writes.get(row.id) ?? Promise.resolve()).then(() => write(row, seen, complete));
      writes.set(row.id, next);
      void next.then(() => {
        if (writes.get(row.id) === next) writes.delete(row.id);
      });
      return next;
    },
  };
}
