import { bodyTooLarge, TooManyRequests } from "../http-errors/errors";

export type HeldBytesOptions = {
  /** PROXY__MAX_MESSAGE_BYTES: the largest body the proxy reads whole. */
  maxMessageBytes: number;
  /** PROXY__MAX_BODY_BYTES: a message read whole is a body relayed too, bound by it as well. */
  maxBodyBytes: number;
  /** PROXY__HELD_BYTES_PER_USER. */
  heldBytesPerUser: number;
  /** PROXY__HELD_BYTES_TOTAL. */
  heldBytesTotal: number;
};

export type HeldBody = { bytes: Uint8Array; release(): void };

/** The body's declared length, if it declares a sane one. */
export function declaredLength(request: Request): number | undefined {
  const declared = request.headers.get("content-length");
  const size = declared === null ? Number.NaN : Number(declared);
  return Number.isSafeInteger(size) && size >= 0 ? size : undefined;
}

/**
 * The request bodies the proxy holds in memory at once (docs/configuration.md "Limits"): a message it must read to decide on
 * (tool policy, pinning, audit), or a small one it sends faster as bytes. Each is held to PROXY__MAX_MESSAGE_BYTES
 * (413), and all of them together to a budget per user and one for the process (429 while they are spent): without
 * one, 500 waiting requests of 16 MiB each were 16 GiB of one user's. Everything else streams.
 */
export function createHeldBytes(options: HeldBytesOptions) {
  const { heldBytesPerUser: perUser, heldBytesTotal: total } = options;
  const maxMessageBytes = Math.min(options.maxMessageBytes, options.maxBodyBytes);
  const tooLarge = () =>
    options.maxBodyBytes < options.maxMessageBytes
      ? bodyTooLarge(maxMessageBytes, "PROXY__MAX_BODY_BYTES")
      : bodyTooLarge(
          maxMessageBytes,
          "PROXY__MAX_MESSAGE_BYTES: the proxy reads each message whole for the tool policy and the audit trail",
        );
  const users = new Map<string, number>();
  let all = 0;
  const give = (userId: string, bytes: number) => {
    const left = (users.get(userId) ?? 0) - bytes;
    if (left <= 0) users.delete(userId);
    else users.set(userId, left);
    all -= bytes;
  };
  const take = (userId: string, bytes: number) => {
    const mine = users.get(userId) ?? 0;
    if (mine + bytes > perUser) {
      throw new TooManyRequests(
        `Your requests waiting at the MCP proxy hold ${perUser} bytes of bodies already (PROXY__HELD_BYTES_PER_USER): retry when they are answered`,
        1,
      );
    }
    if (all + bytes > total) {
      throw new TooManyRequests(
        `The MCP proxy holds ${total} bytes of request bodies already (PROXY__HELD_BYTES_TOTAL): retry shortly`,
        1,
      );
    }
    users.set(userId, mine + bytes);
    all += bytes;
  };

  return {
    maxMessageBytes,

    /**
     * Holds `bytes` of a message read already (http/read-already.ts) for `userId` as `read` would hold its body: too
     * large a message is refused (413), one the budgets have no room for too (429); the release gives them back.
     */
    holdRead(userId: string, bytes: number): () => void {
      if (bytes > maxMessageBytes) throw tooLarge();
      take(userId, bytes);
      return () => give(userId, bytes);
    },

    /**
     * Reads `request`'s body whole for `userId`, counted against the budgets as it arrives (a declared length is
     * taken at once, unread when it is too much); `release` gives the bytes back once the body has been sent on.
     */
    async read(userId: string, request: Request): Promise<HeldBody> {
      const declared = declaredLength(request);
      let held = 0;
      const release = () => {
        give(userId, held);
        held = 0;
      };
      const hold = (bytes: number) => {
        take(userId, bytes);
        held += bytes;
      };
      try {
        if (declared !== undefined) {
          if (declared > maxMessageBytes) throw tooLarge();
          hold(declared);
          const bytes = await request.bytes();
          if (bytes.byteLength > held) throw tooLarge();
          return { bytes, release };
        }
        const chunks: Uint8Array[] = [];
        const reader = request.body!.getReader();
        try {
          for (let next = await reader.read(); !next.done; next = await reader.read()) {
            if (held + next.value.byteLength > maxMessageBytes) throw tooLarge();
            hold(next.value.byteLength);
            chunks.push(next.value);
          }
        } catch (e) {
          await reader.cancel().catch(() => undefined);
          throw e;
        }
        return { bytes: Buffer.concat(chunks), release };
      } catch (e) {
        release();
        throw e;
      }
    },

    /**
     * Reads a body of declared length whole if both budgets have room for it — one that need not be read (it is sent
     * faster as bytes) — else undefined, and the caller streams it.
     */
    async readIfRoom(userId: string, request: Request): Promise<HeldBody | undefined> {
      const declared = declaredLength(request);
      const release = declared === undefined ? undefined : this.tryHold(userId, declared);
      if (!release) return undefined;
      try {
        return { bytes: await request.bytes(), release };
      } catch (e) {
        release();
        throw e;
      }
    },

    /** Holds `bytes` if both budgets allow (an answer read whole for the audit trail), else undefined: nothing is refused. */
    tryHold(userId: string, bytes: number): (() => void) | undefined {
      try {
        take(userId, bytes);
      } catch {
        return undefined;
      }
      let held = true;
      return () => {
        if (held) give(userId, bytes);
        held = false;
      };
    },
  };
}
export type HeldBytes = ReturnType<typeof createHeldBytes>;
