import { createHash } from "node:crypto";
import type { SeenTool, ToolDefinition } from "../connectors/model";
import type { ConnectorRow, ToolPinRow } from "../connectors/repository";

/**
 * Tool pinning (docs/behaviour.md "Tool pinning"): what a server says a tool is, as a digest, compared with what a person
 * approved — against a server that changes a tool's definition after it was trusted (the "rug pull" of the
 * [MCP security best practices](https://modelcontextprotocol.io/specification/2025-11-25/basic/security_best_practices)).
 */

/** The parts of a tool that say what it does; key order does not matter. */
const DEFINITION = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"] as const;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** A listed tool as pinning keeps it: its definition (the parts above, as the server sent them) and that one's digest. */
export function seenTool(tool: { name: string } & Record<string, unknown>): SeenTool {
  const definition = Object.fromEntries(
    DEFINITION.filter((key) => tool[key] !== undefined).map((key) => [key, tool[key]]),
  ) as ToolDefinition;
  return { name: tool.name, digest: createHash("sha256").update(canonical(definition)).digest("hex"), definition };
}

export type Pinning = {
  /** Strict pinning hides a tool whose definition is not the approved one (new since the first listing, or changed). */
  hidden(name: string, digest: string): boolean;
  /** The same for a call, by the server's name: from the pins, as the last listing left them. */
  hiddenByName(name: string): boolean;
  /** What a listing page showed (server names and digests); `complete`: it was the last page. */
  observe(seen: SeenTool[], complete: boolean): void;
};

export function createPinning(
  row: ConnectorRow,
  pins: ToolPinRow[],
  record: (seen: SeenTool[], complete: boolean) => void,
): Pinning {
  const strict = row.tool_policy?.pin === "strict";
  const pinned = row.tools_pinned_at !== null;
  const byName = new Map(pins.map((pin) => [pin.name, pin]));
  return {
    hidden(name, digest) {
      if (!strict || !pinned) return false;
      const pin = byName.get(name);
      return pin === undefined || pin.approved_digest !== digest;
    },
    hiddenByName(name) {
      if (!strict || !pinned) return false;
      const pin = byName.get(name);
      return pin === undefined || pin.approved_digest !== pin.digest;
    },
    observe: record,
  };
}
