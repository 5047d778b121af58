import { Elysia } from "elysia";
import type { RequestAuthenticator } from "./authenticate";

/** `{ auth: true }` on a route resolves `principal` or answers 401 (through the problem plugin). */
export function authPlugin(authenticate: RequestAuthenticator, kind: "api" | "proxy" = "api") {
  return new Elysia({ name: "auth", seed: kind }).macro({
    auth: {
      async resolve({ request }) {
        return { principal: await authenticate(request) };
      },
      detail: { security: [{ basic: [] }, { bearer: [] }] },
    },
  });
}
export type AuthPlugin = ReturnType<typeof authPlugin>;
