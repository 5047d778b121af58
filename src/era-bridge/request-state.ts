import type { Sealer } from "../secrets/sealer";

/** What a parked call's `requestState` says, once opened: which replica's bridges hold the call, and its park there. */
export type ParkedState = { holder: string; handle: string };

/** What secrets/sealer.ts writes: its version, then base64 of the IV, the ciphertext and the tag. */
const CANONICAL = /^v1:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Binds a state to the bridge that issued it: the caller (user, role, credential) and the MCP URL (bridges.ts `key`). */
const context = (bridge: string) => `parked-call/${bridge}`;

/**
 * The `requestState` a 2026-07-28 client gets with `input_required` (MCP 2026-07-28: opaque to the client, echoed in
 * its retry), sealed by the service (secrets/sealer.ts, AES-GCM under the key every replica shares): it names the
 * replica holding the call, so a retry that reaches another replica can be handed over to it (handoffs.ts), and the
 * park there (gateway/parked.ts, a random 128-bit handle). The bridge's identity is the sealing's context: a state
 * copied to another caller does not open, and a forged or garbled one names nothing.
 */
export function sealState(sealer: Sealer, bridge: string, state: ParkedState): string {
  return sealer.seal(JSON.stringify([state.holder, state.handle]), context(bridge));
}

/** The state `requestState` names for the caller of `bridge`; undefined when it is not one the service sealed for them. */
export function openState(sealer: Sealer, bridge: string, requestState: string): ParkedState | undefined {
  // Exactly as sealed (whole base64 quanta): a decoder skips a stray trailing character, and a state is one string.
  if (!CANONICAL.test(requestState)) return undefined;
  try {
    const [holder, handle] = JSON.parse(sealer.open(requestState, context(bridge))) as unknown[];
    return typeof holder === "string" && typeof handle === "string" ? { holder, handle } : undefined;
  } catch {
    return undefined;
  }
}
