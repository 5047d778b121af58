import type { Cors } from "../../http/cors";
import type { Principal } from "../../users/model";
import type { Clients } from "../clients";
import type { jsonEndpoint } from "../responses";
import type { AuthServer } from "../service";

export type AuthServerRouteDeps = {
  server: AuthServer;
  clients: Clients;
  /** Checks a person's user name and password on the sign-in page (the failure brake applies). */
  signIn(request: Request, username: string, password: string): Promise<Principal>;
  /** What browser-based MCP clients call across origins: the documents and the token, registration and revocation endpoints. */
  cors: Cors;
  /** The address a request came from: registrations are bounded per address. */
  clientAddress(request: Request): string | undefined;
};
/** What each endpoint's routes get: the deps, and the wrapper of the JSON endpoints (CORS, OAuth errors). */
export type AuthServerEndpointDeps = AuthServerRouteDeps & { json: ReturnType<typeof jsonEndpoint> };
