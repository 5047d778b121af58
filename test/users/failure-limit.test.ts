import { expect, test } from "bun:test";
import { createFailureLimit } from "../../src/users/failure-limit";

const limit = (maxClients = 10_000) => {
  let now = 1_000_000;
  const limiter = createFailureLimit({ clock: () => now, maxFailures: 3, windowMs: 60_000, maxClients });
  return {
    brake: {
      failed: (client: string) => limiter.brake(() => client).failed(),
      check: (address: () => string) => limiter.brake(address).check(),
      remembered: limiter.remembered,
    },
    advance: (ms: number) => (now += ms),
  };
};
const refused = (brake: ReturnType<typeof limit>["brake"], client: string) => {
  try {
    brake.check(() => client);
    return false;
  } catch (e) {
    return (e as { status?: number }).status === 429;
  }
};

test("a client over its failures is refused until its window ends, then forgotten: no address is looked up any more", () => {
  const { brake, advance } = limit();
  for (let i = 0; i < 3; i++) brake.failed("10.0.0.1");
  expect(refused(brake, "10.0.0.1")).toBe(true);
  expect(refused(brake, "10.0.0.2")).toBe(false);
  advance(59_999);
  expect(refused(brake, "10.0.0.1")).toBe(true);
  advance(1);
  let lookedUp = 0;
  brake.check(() => (lookedUp++, "10.0.0.1"));
  expect(lookedUp).toBe(0);
  expect(brake.remembered()).toBe(0);
  expect(refused(brake, "10.0.0.1")).toBe(false);
});

test("windows end in the order they began, whoever failed since; a failure after a window ended opens a new one", () => {
  const { brake, advance } = limit();
  brake.failed("a");
  advance(30_000);
  brake.failed("b");
  brake.failed("a"); // within a's window: counted there, which still ends first
  advance(30_000);
  brake.check(() => "b");
  expect(brake.remembered()).toBe(1); // a's window ended, b's not
  brake.failed("a"); // a new window for a, after b's
  advance(30_000);
  brake.check(() => "a");
  expect(brake.remembered()).toBe(1);
  for (let i = 0; i < 2; i++) brake.failed("a");
  expect(refused(brake, "a")).toBe(true);
});

test("beyond maxClients the oldest window is forgotten first", () => {
  const { brake } = limit(2);
  for (let i = 0; i < 3; i++) brake.failed("first");
  brake.failed("second");
  brake.failed("third");
  expect(brake.remembered()).toBe(2);
  expect(refused(brake, "first")).toBe(false);
});
