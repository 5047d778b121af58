import type { Logger } from "../observability/logger";
import type { Job } from "../scheduler/scheduler";
import type { HandoffStore } from "./handoff-store";

type Id = string | number;
/** A JSON-RPC answer to the retry, as the holder's bridge gave it (or an error of the handoff's own). */
export type RetryAnswer = { jsonrpc: "2.0"; id: Id | null; result?: unknown; error?: { code: number; message: string } };

/** How often a replica looks for retries handed to it (while it holds parked calls) and for their answers. */
export const HANDOFF_POLL_MS = 75;
/**
 * How long a handed-over retry may stay untaken: a replica holding parked calls takes its retries within a poll or two,
 * so one that nobody takes names a call held nowhere (used already, ended, or on a replica that is gone).
 */
export const HANDOFF_PICKUP_MS = 3_000;

export type HandoffOptions = {
  rows: HandoffStore;
  /** This replica's bridges (the `holder` a requestState names). */
  holder: string;
  newId: () => string;
  clock: () => number;
  log: Logger;
  /** How long a retry waits for the holder's answer (PROXY__INPUT_TIMEOUT_SECONDS). */
  waitMs: number;
  /** Whether this replica holds parked calls now (it polls for their retries only then). */
  holding(): boolean;
  /** Runs a retry here as a local one, on the caller's bridge `bridge`; `signal` aborts when its client goes away. */
  deliver(bridge: string, message: Record<string, unknown>, signal: AbortSignal): Promise<RetryAnswer>;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Parked calls across replicas (docs/behaviour.md "Protocol eras"): a 2026-07-28 client's retry that reaches a replica
 * other than the one holding its call is handed over through the store — replicas on one PostgreSQL database have no
 * addresses of each other, and a round-robin balancer sends each request anywhere. The receiving replica writes the
 * retry (`handOver`), the holder takes it, runs it on the caller's bridge exactly as a retry it had received itself,
 * and writes the answer back; the receiver answers its client and deletes the row. The holder polls only while it holds
 * parked calls or runs retries handed to it; the receiver polls its one row while its client waits.
 */
export function createHandoffs({ rows, holder, newId, clock, log, waitMs, holding, deliver }: HandoffOptions) {
  /** Retries handed to this replica and running here: their rows' ids, and what tells the call its client went away. */
  const running = new Map<string, AbortController>();
  let polling = false;

  async function pollOnce() {
    for (const taken of await rows.take(holder, clock())) {
      const gone = new AbortController();
      running.set(taken.id, gone);
      const error = (message: string): RetryAnswer => ({ jsonrpc: "2.0", id: null, error: { code: -32603, message } });
      void (async () => {
        let answer: RetryAnswer;
        try {
          const ran = deliver(taken.bridge, JSON.parse(taken.message) as Record<string, unknown>, gone.signal);
          // Its client went away before the holder took it: the call is cancelled, as a local retry's would be.
          if (taken.abandoned) gone.abort();
          answer = await ran;
        } catch (e) {
          answer = error(`The retry could not be run: ${(e as Error).message}`);
        }
        running.delete(taken.id);
        // No one reads the answer of a retry abandoned meanwhile: its row goes.
        if (gone.signal.aborted || !(await rows.answer(taken.id, JSON.stringify(answer)))) await rows.delete([taken.id]);
      })().catch((e) => log.warn("a handed-over retry's answer was not written", { error: (e as Error).message }));
    }
    if (running.size === 0) return;
    const waiting = await rows.waiting([...running.keys()]);
    const abandoned = [...running.keys()].filter((id) => !waiting.has(id));
    for (const id of abandoned) running.get(id)?.abort();
  }

  async function poll() {
    while (holding() || running.size > 0) {
      try {
        await pollOnce();
      } catch (e) {
        log.warn("looking for handed-over retries failed", { error: (e as Error).message });
      }
      await pause(HANDOFF_POLL_MS);
    }
    polling = false;
  }

  return {
    /** Looks for retries handed to this replica from now on, while it holds parked calls (a call was just parked). */
    watch() {
      if (polling) return;
      polling = true;
      void poll();
    },

    /**
     * Hands a retry of the caller of `bridge` over to `to`, the replica holding its call, and waits for the answer:
     * at most `waitMs`, and only while `signal` (its client) is there; undefined when the client went away.
     */
    async handOver(to: string, bridge: string, message: { id: Id } & Record<string, unknown>, signal: AbortSignal) {
      const id = newId();
      const refuse = (code: number, text: string): RetryAnswer => ({
        jsonrpc: "2.0",
        id: message.id,
        error: { code, message: text },
      });
      await rows.insert(id, to, bridge, JSON.stringify(message), clock());
      const started = performance.now();
      for (;;) {
        await pause(HANDOFF_POLL_MS);
        if (signal.aborted) {
          await rows.abandon(id, clock());
          return undefined;
        }
        const row = await rows.read(id);
        if (row?.answer !== undefined) {
          await rows.delete([id]);
          return JSON.parse(row.answer) as RetryAnswer;
        }
        const waited = performance.now() - started;
        // MCP 2026-07-28 InvalidParams, as for a state that names nothing on the replica that got it.
        if (!row || (!row.taken && waited > HANDOFF_PICKUP_MS && (await rows.withdraw(id))))
          return refuse(-32602, "requestState names no call waiting for input");
        if (waited > waitMs) {
          await rows.abandon(id, clock());
          return refuse(-32603, `The replica holding the call did not answer within ${Math.round(waitMs / 1000)} s`);
        }
      }
    },
  };
}
export type Handoffs = ReturnType<typeof createHandoffs>;

/**
 * Rows of handed-over retries nobody will read again (the replica that wrote one died waiting): swept on each tick
 * (one indexed delete, on any replica), once older than the longest wait (`waitMs`) and a minute.
 */
export const sweepHandoffs = (rows: HandoffStore, clock: () => number, waitMs: number, log: Logger): Job => ({
  name: "sweep-parked-handoffs",
  run: async () => {
    const swept = await rows.sweep(clock() - waitMs - 60_000);
    if (swept > 0) log.info("swept handed-over retries left behind", { rows: swept });
  },
});
