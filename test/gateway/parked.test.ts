import { expect, test } from "bun:test";
import { createParkedCalls } from "../../src/gateway/parked";
import { waitFor } from "../support/wait";

// The parked calls' rules on their own (the bridge's end-to-end tests are in test/era-bridge/): what the client is
// sent, the answer that comes before the retry, and a call whose client never comes back.
function harness(timeoutMs = 60_000) {
  const toServer: unknown[] = [];
  const abandoned: string[] = [];
  const parked = createParkedCalls({
    timeoutMs,
    answerServer: (id, answer) => void toServer.push({ id, ...answer }),
    abandon: (global, reason) => void abandoned.push(`${global}: ${reason}`),
  });
  const client = () => {
    const got: { id?: unknown; result?: Record<string, unknown>; error?: unknown }[] = [];
    return { got, via: { send: async (m: unknown) => void got.push(m as (typeof got)[number]) } };
  };
  return { parked, toServer, abandoned, client };
}
const elicit = (id: number) => ({ id, method: "elicitation/create", params: { message: `question ${id}` } });

test("the answer that comes before the retry is kept for it; two questions in one call take two rounds", async () => {
  const { parked, toServer, client } = harness();
  const first = client();
  const sink = parked.ask("r-1", { via: first.via, id: 7 }, { elicitation: {} }, elicit(100))!;
  expect(first.got[0]).toMatchObject({ id: 7, result: { resultType: "input_required" } });
  const state1 = first.got[0]!.result!.requestState as string;
  // The server asks again before the client came back: shown on the next round.
  parked.ask("r-1", { via: first.via, id: 7 }, { elicitation: {} }, elicit(101));
  const second = client();
  const resumed = parked.retry(state1, { "input-1": { action: "accept" } }, { via: second.via, id: 8 });
  expect("resumed" in resumed).toBe(true);
  expect(toServer).toEqual([{ id: 100, result: { action: "accept" } }]);
  expect(second.got[0]).toMatchObject({ id: 8, result: { resultType: "input_required", inputRequests: { "input-2": {} } } });
  const state2 = second.got[0]!.result!.requestState as string;
  expect(state2).not.toBe(state1);
  expect(parked.retry(state1, { "input-1": { action: "accept" } }, { via: client().via, id: 10 })).toMatchObject({
    error: { code: -32602 },
  });
  // The call ends before the client's last retry: the retry gets it, under its own id.
  await sink.send({ jsonrpc: "2.0", id: 7, result: { content: [], resultType: "complete" } });
  const third = client();
  parked.retry(state2, { "input-2": { action: "decline" } }, { via: third.via, id: 9 });
  expect(third.got).toEqual([{ jsonrpc: "2.0", id: 9, result: { content: [], resultType: "complete" } } as never]);
  expect(parked.size()).toBe(0);
});

test("a call whose client never retries is cancelled upstream, and the server's question answered with an error", async () => {
  const { parked, toServer, abandoned, client } = harness(30);
  parked.ask("r-2", { via: client().via, id: 1 }, { sampling: {} }, { id: 5, method: "sampling/createMessage" });
  await waitFor("the parked call to expire", () => abandoned.length > 0, 2_000);
  expect(abandoned[0]).toStartWith("r-2: ");
  expect(toServer).toEqual([{ id: 5, error: { code: -32603, message: expect.stringContaining("in time") } }]);
  expect(parked.size()).toBe(0);
});

test("a retry whose client goes away cancels the call; a capability not declared is refused to the server", () => {
  const { parked, toServer, abandoned, client } = harness();
  const first = client();
  parked.ask("r-3", { via: first.via, id: 1 }, { elicitation: {} }, elicit(1));
  const state = first.got[0]!.result!.requestState as string;
  const resumed = parked.retry(state, { "input-1": { action: "accept" } }, { via: client().via, id: 2 });
  if (!("resumed" in resumed)) throw new Error("not resumed");
  resumed.resumed.cancel();
  expect(abandoned).toEqual(["r-3: The client went away"]);
  expect(parked.ask("r-4", { via: client().via, id: 1 }, {}, { id: 9, method: "roots/list" })).toBeUndefined();
  expect(toServer.at(-1)).toMatchObject({ id: 9, error: { code: -32601 } });
});

test("a client that retried in time waits for the server as long as it takes; each round has its own wait", async () => {
  const { parked, abandoned, client } = harness(40);
  const first = client();
  const sink = parked.ask("r-5", { via: first.via, id: 1 }, { elicitation: {} }, elicit(1))!;
  const state = first.got[0]!.result!.requestState as string;
  await Bun.sleep(20);
  const retry = client();
  parked.retry(state, { "input-1": { action: "accept" } }, { via: retry.via, id: 2 });
  // The server takes longer than the wait for a retry: the call goes on.
  await Bun.sleep(80);
  expect(abandoned).toEqual([]);
  await sink.send({ jsonrpc: "2.0", id: 1, result: { content: [], resultType: "complete" } });
  expect(retry.got).toEqual([{ jsonrpc: "2.0", id: 2, result: { content: [], resultType: "complete" } } as never]);
});

test("a call given up while a retry waits answers that retry with why", () => {
  const { parked, client } = harness();
  const first = client();
  parked.ask("r-6", { via: first.via, id: 1 }, { elicitation: {} }, elicit(1));
  const state = first.got[0]!.result!.requestState as string;
  const retry = client();
  parked.retry(state, { "input-1": { action: "accept" } }, { via: retry.via, id: 2 });
  expect(retry.got).toEqual([]);
  parked.endAll("The gateway closed");
  expect(retry.got).toEqual([{ jsonrpc: "2.0", id: 2, error: { code: -32603, message: "The gateway closed" } } as never]);
  expect(parked.size()).toBe(0);
});

test("an answer that is not a result object is refused to the client, and the call still waits for a good one", () => {
  const { parked, toServer, client } = harness();
  const first = client();
  parked.ask("r-7", { via: first.via, id: 1 }, { elicitation: {} }, elicit(1));
  const state = first.got[0]!.result!.requestState as string;
  for (const bad of [null, "yes", 42, ["accept"]])
    expect(parked.retry(state, { "input-1": bad }, { via: client().via, id: 2 })).toMatchObject({ error: { code: -32602 } });
  expect(toServer).toEqual([]);
  expect("resumed" in parked.retry(state, { "input-1": { action: "accept" } }, { via: client().via, id: 3 })).toBe(true);
  expect(toServer).toEqual([{ id: 1, result: { action: "accept" } }]);
});
