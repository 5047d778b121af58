import { createOpenedCache } from "../secrets/opened-cache";
import type { Sealer } from "../secrets/sealer";
import type { ConnectorRow } from "./repository";
import { sealContext } from "./sealing";

/** Opens a connector's sealed columns. Sealing happens where they are written: create (client secret) and transitions.ts. */
export function createSealedColumns(sealer: Sealer) {
  const openedHeaders = createOpenedCache<Record<string, string>>();
  const open = (row: ConnectorRow, column: "client_secret" | "access_token") => {
    const sealed = row[column];
    return sealed ? sealer.open(sealed, sealContext(row.id, column)) : null;
  };
  return {
    /** The connector's own OAuth client secret (from the request or its preset). */
    clientSecret: (row: ConnectorRow): string | null => open(row, "client_secret"),
    /** A managed connector's access token, for its deployment's environment. */
    accessToken: (row: ConnectorRow): string | null => open(row, "access_token"),
    /** The stored headers, for the proxy: opened once per sealed value, not on every request. */
    headers(row: ConnectorRow): Record<string, string> {
      const sealed = row.headers;
      if (!sealed) return {};
      return openedHeaders(
        sealed,
        () => JSON.parse(sealer.open(sealed, sealContext(row.id, "headers"))) as Record<string, string>,
      );
    },
  };
}
export type SealedColumns = ReturnType<typeof createSealedColumns>;
