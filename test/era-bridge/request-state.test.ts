import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { openState, sealState } from "../../src/era-bridge/request-state";
import { createSealer } from "../../src/secrets/sealer";

// A parked call's requestState on its own (era-bridge/request-state.ts): sealed under the service's key for one
// caller's bridge, naming the replica holding the call and the park's handle. What the proxy makes of it with real
// calls is in handoffs.test.ts (two instances) and replicas.test.ts (replicas of the binary).
const sealer = createSealer(randomBytes(32));
const bridge = JSON.stringify(["connector-1", "user-1", "user", "token:1", null, null, null]);
const state = { holder: "process-a/connectors", handle: randomBytes(16).toString("base64url") };

test("opens, for the bridge it was sealed for, to the holder and the handle; each sealing differs", () => {
  const sealed = sealState(sealer, bridge, state);
  expect(openState(sealer, bridge, sealed)).toEqual(state);
  expect(sealState(sealer, bridge, state)).not.toBe(sealed);
  // Opaque: neither the holder nor the handle can be read from it.
  expect(sealed).not.toContain("process-a");
  expect(sealed).not.toContain(state.handle);
});

test("names nothing for another bridge, under another key, garbled, re-encoded or not the service's", () => {
  const sealed = sealState(sealer, bridge, state);
  const otherCredential = JSON.stringify(["connector-1", "user-1", "user", "basic:user-1", null, null, null]);
  expect(openState(sealer, otherCredential, sealed)).toBeUndefined();
  expect(openState(createSealer(randomBytes(32)), bridge, sealed)).toBeUndefined();
  const body = sealed.slice(3);
  for (const bad of [
    "",
    "v1:",
    `${sealed}x`,
    `${sealed}====`,
    `v2:${body}`,
    sealed.slice(0, -2),
    `${sealed.slice(0, 10)}${sealed[10] === "A" ? "B" : "A"}${sealed.slice(11)}`,
  ])
    expect(openState(sealer, bridge, bad)).toBeUndefined();
  // The same bytes in base64url (when that differs: a + or / in it) are not the state the service gave.
  const url = Buffer.from(body, "base64").toString("base64url");
  if (url !== body) expect(openState(sealer, bridge, `v1:${url}`)).toBeUndefined();
  // Sealed by the service in the right context, but not a state (another sealed value copied here): nothing.
  expect(openState(sealer, bridge, sealer.seal('{"holder":"x"}', `parked-call/${bridge}`))).toBeUndefined();
  expect(openState(sealer, bridge, sealer.seal("[1,2]", `parked-call/${bridge}`))).toBeUndefined();
});
