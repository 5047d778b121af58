import type { SeenTool } from "../connectors/model";
import type { ConnectorRow, ToolPinRow } from "../connectors/repository";
import { compileToolPolicy, type CompiledToolPolicy } from "../connectors/tool-policy";
import type { ToolView } from "./tool-filter";
import { createPinning } from "./tool-pins";

/** A connector's tool pins, and where a listing's tools are recorded (off the request: it does not wait). */
export type PinStore = {
  list(connectorId: string): Promise<ToolPinRow[]>;
  record(row: ConnectorRow, seen: SeenTool[], complete: boolean): Promise<void>;
};

/**
 * The third step's rules (docs/behaviour.md "Tool policy", "Tool pinning"): a connector's policy as the proxy applies it on the
 * wire (tool-filter.ts). Connectors without one have none, and their bodies need not be read for it.
 */
export function createToolViews(pins: PinStore) {
  // Rows are cached (connectors/repository.ts): a policy is compiled once per row read, not once per request.
  const compiled = new WeakMap<object, CompiledToolPolicy>();
  return async function viewOf(row: ConnectorRow): Promise<ToolView | undefined> {
    const policy = row.tool_policy;
    if (!policy) return undefined;
    let view = compiled.get(policy);
    if (!view) compiled.set(policy, (view = compileToolPolicy(policy)));
    if (!policy.pin) return view;
    const pinned = await pins.list(row.id);
    return { ...view, pinning: createPinning(row, pinned, (seen, complete) => void pins.record(row, seen, complete)) };
  };
}
