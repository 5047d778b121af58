import { createHmac } from "node:crypto";
import type { ConnectorEventRow, ConnectorRepository } from "../connectors/repository";
import { classifyFetchFailure, type FetchLike } from "../http/fetch";
import type { Logger } from "../observability/logger";
import { leased, type LeaseDeps } from "../scheduler/leases";
import type { Job } from "../scheduler/scheduler";
import type { EventFeed } from "./feed";
import type { WebhookCursor, WebhookCursorRepository } from "./repository";

/** Attempts at one event before it is given up (logged) and the next one is sent. */
export const WEBHOOK_MAX_ATTEMPTS = 8;
/** A receiver has this long to answer. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** The job's name, and its lease's: one replica delivers at a time. */
const JOB_NAME = "deliver-webhooks";
/** Backoff after the n-th failed attempt: 1 s, 2 s, 4 s … at most 5 minutes. */
export const webhookBackoffMs = (attempts: number) => Math.min(1000 * 2 ** (attempts - 1), 300_000);

/**
 * The signing key: a `whsec_`-prefixed secret is base64 after its prefix (as Standard Webhooks libraries make them);
 * any other string is used as its UTF-8 bytes.
 */
export function webhookKey(secret: string): Buffer {
  return secret.startsWith("whsec_") ? Buffer.from(secret.slice("whsec_".length), "base64") : Buffer.from(secret, "utf8");
}

/** [Standard Webhooks](https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#signature-scheme): `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
export function signWebhook(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

export type WebhookDeps = {
  urls: readonly string[];
  key: Buffer;
  cursors: WebhookCursorRepository;
  events: Pick<ConnectorRepository, "eventsAfter" | "eventBounds">;
  /** This process's events, heard of at once: each starts a delivery. */
  feed: Pick<EventFeed, "subscribe">;
  /** The guarded fetch: a webhook URL passes the same address rules as every URL the service calls. */
  fetch: FetchLike;
  clock: () => number;
  log: Logger;
  /** A delivery round runs where no other replica runs one at the same time: under the job's lease. */
  leases: LeaseDeps;
};

/**
 * Outbound webhooks for connector events: each event POSTed to each URL in order, signed, retried with backoff; a
 * receiver that is down holds back only its own deliveries. Runs beside requests, never in one: from the scheduler
 * and when this process writes an event, one replica at a time (a lease). Delivery is at least once (a replica killed
 * after a receiver's 2xx sends that event again): receivers deduplicate on `webhook-id`.
 */
export function createWebhooks(deps: WebhookDeps) {
  const { cursors, clock, log } = deps;
  let running: Promise<void> | undefined;
  let again = false;
  let retry: ReturnType<typeof setTimeout> | undefined;

  async function cursorOf(url: string): Promise<WebhookCursor> {
    const found = await cursors.find(url);
    if (found) return found;
    // A URL new to the service hears of what happens from now on, not of the kept past.
    await cursors.create({ url, last_event_id: (await deps.events.eventBounds()).newest, attempts: 0, next_attempt_at: 0 });
    return (await cursors.find(url))!;
  }

  const save = (cursor: WebhookCursor) => cursors.save(cursor);

  /** One POST; undefined when the receiver took it (2xx), else why not. */
  async function post(url: string, event: ConnectorEventRow): Promise<string | undefined> {
    const id = `evt_${event.id}`;
    const timestamp = Math.floor(clock() / 1000);
    const body = JSON.stringify({ type: event.type, timestamp: new Date(event.created_at).toISOString(), data: event.data });
    try {
      const response = await deps.fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signWebhook(deps.key, id, timestamp, body),
        },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => undefined);
      return response.ok ? undefined : `HTTP ${response.status}`;
    } catch (e) {
      return classifyFetchFailure(e, WEBHOOK_TIMEOUT_MS).detail;
    }
  }

  async function deliverTo(url: string): Promise<void> {
    const cursor = await cursorOf(url);
    for (;;) {
      if (cursor.next_attempt_at > clock()) return schedule(cursor.next_attempt_at - clock());
      const rows = await deps.events.eventsAfter(cursor.last_event_id, 50);
      if (rows.length === 0) return;
      for (const event of rows) {
        const failure = await post(url, event);
        if (failure === undefined) {
          Object.assign(cursor, { last_event_id: event.id, attempts: 0, next_attempt_at: 0 });
          await save(cursor);
          continue;
        }
        cursor.attempts++;
        if (cursor.attempts >= WEBHOOK_MAX_ATTEMPTS) {
          log.error("a webhook event was given up", { url, event_id: event.id, attempts: cursor.attempts, error: failure });
          Object.assign(cursor, { last_event_id: event.id, attempts: 0, next_attempt_at: 0 });
        } else {
          cursor.next_attempt_at = clock() + webhookBackoffMs(cursor.attempts);
          log.warn("a webhook delivery failed; it will be retried", {
            url,
            event_id: event.id,
            attempts: cursor.attempts,
            error: failure,
          });
        }
        await save(cursor);
        break;
      }
    }
  }

  /** Runs again when the earliest retry is due (the scheduler's tick is the fallback). */
  function schedule(inMs: number) {
    if (retry) return;
    retry = setTimeout(
      () => {
        retry = undefined;
        void deliver();
      },
      Math.max(inMs, 10),
    );
    retry.unref?.();
  }

  // A URL's position is fixed when the service starts with it, before anything happens that it should hear of.
  const started = Promise.all(deps.urls.map(cursorOf)).catch((e) =>
    log.warn("webhook positions could not be read yet", { error: (e as Error).message }),
  );

  const round = leased(
    {
      name: JOB_NAME,
      async run() {
        for (const url of deps.urls) await deliverTo(url);
      },
    },
    deps.leases,
  );

  /** Delivers what is due to every URL; a call while delivering makes it go round once more. */
  function deliver(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        await started;
        do {
          again = false;
          await round.run();
        } while (again);
      } catch (e) {
        log.warn("webhook delivery stopped for now", { error: (e as Error).message });
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  deps.feed.subscribe(() => void deliver());

  return {
    deliver,
    /** The scheduler's: what is due (a retry, an event another replica wrote) is delivered. */
    job: { name: JOB_NAME, run: deliver } satisfies Job,
    stop() {
      if (retry) clearTimeout(retry);
      retry = undefined;
    },
  };
}
export type Webhooks = ReturnType<typeof createWebhooks>;
