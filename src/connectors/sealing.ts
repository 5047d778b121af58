/** A connector's sealed columns (secrets/sealer.ts); key rotation re-seals each of them. */
export const SEALED_COLUMNS = ["client_secret", "headers", "access_token"] as const;

/** Where each sealed column's context comes from: binds a ciphertext to its row and column. */
export const sealContext = (id: string, column: (typeof SEALED_COLUMNS)[number]) => `connectors/${id}/${column}`;
