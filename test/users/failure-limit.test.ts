import { expect, test } from "bun:test";
import { createFailureLimit } from "../../src/users/failure-limit";

const limit = (options: { maxEntries?: number; maxAddressFailures?: number } = {}) => {
  let now = 1_000_000;
  const limiter = createFailureLimit({
    clock: () => now,
    maxFailures: 3,
    maxAddressFailures: options.maxAddressFailures ?? 6,
    windowMs: 60_000,
    ...options,
  });
  const brakeOf = (address: string) => limiter.brake(() => address);
  return {
    brakeOf,
    lazyBrake: (address: () => string) => limiter.brake(address),
    /** A settled wrong password of `user` from `address`. */
    failed: (address: string, user: string) => brakeOf(address).attempt(user).failed(),
    remembered: limiter.remembered,
    advance: (ms: number) => (now += ms),
  };
};
const status = (f: () => unknown) => {
  try {
    f();
    return 0;
  } catch (e) {
    return (e as { status?: number }).status;
  }
};
const refused = (l: ReturnType<typeof limit>, address: string, user: string) =>
  status(() => l.brakeOf(address).check(user)) === 429;

test("a user name over its failures from an address is refused until the window ends, then forgotten: no address is looked up any more", () => {
  const l = limit();
  for (let i = 0; i < 3; i++) l.failed("10.0.0.1", "alice");
  expect(refused(l, "10.0.0.1", "alice")).toBe(true);
  expect(status(() => l.brakeOf("10.0.0.1").attempt("alice"))).toBe(429);
  expect(refused(l, "10.0.0.1", "bob")).toBe(false);
  expect(refused(l, "10.0.0.2", "alice")).toBe(false);
  l.advance(59_999);
  expect(refused(l, "10.0.0.1", "alice")).toBe(true);
  l.advance(1);
  let lookedUp = 0;
  l.lazyBrake(() => (lookedUp++, "10.0.0.1")).check("alice");
  expect(lookedUp).toBe(0);
  expect(l.remembered()).toBe(0);
  expect(refused(l, "10.0.0.1", "alice")).toBe(false);
});

test("an attempt is counted before its result: three open attempts hold every slot; a success gives its slot back and leaves nothing behind", () => {
  const l = limit();
  const brake = l.brakeOf("10.0.0.1");
  const open = [brake.attempt("alice"), brake.attempt("alice"), brake.attempt("alice")];
  expect(status(() => brake.attempt("alice"))).toBe(429);
  // A credential verified before (check) is not refused by attempts still under way: only by failures.
  expect(status(() => brake.check("alice"))).toBe(0);
  open[0]!.succeeded();
  open[0]!.failed(); // settled already: nothing more is counted
  const fourth = brake.attempt("alice");
  for (const a of [open[1]!, open[2]!, fourth]) a.succeeded();
  expect(l.remembered()).toBe(0);
});

test("failures of many user names from one address stop at the address's ceiling, for every name from it", () => {
  const l = limit();
  for (let i = 0; i < 6; i++) l.failed("10.0.0.1", `user-${i}`);
  expect(refused(l, "10.0.0.1", "someone-else")).toBe(true);
  expect(status(() => l.brakeOf("10.0.0.1").attempt("someone-else"))).toBe(429);
  expect(refused(l, "10.0.0.2", "someone-else")).toBe(false);
});

test("a failure settled after its window ended opens a new window", () => {
  const l = limit();
  const slow = l.brakeOf("10.0.0.1").attempt("alice");
  l.failed("10.0.0.1", "alice");
  l.advance(60_000);
  slow.failed();
  l.failed("10.0.0.1", "alice");
  expect(refused(l, "10.0.0.1", "alice")).toBe(false);
  l.failed("10.0.0.1", "alice");
  expect(refused(l, "10.0.0.1", "alice")).toBe(true);
});

test("IPv6 addresses of one /64 share their counters; another /64 does not", () => {
  const l = limit();
  for (let i = 1; i <= 3; i++) l.failed(`2001:db8:0:1::${i}`, "alice");
  expect(refused(l, "2001:db8::1:abcd:0:0:1", "alice")).toBe(true);
  expect(refused(l, "2001:db8:0:2::1", "alice")).toBe(false);
});

test("beyond maxEntries the oldest window is forgotten first", () => {
  const l = limit({ maxEntries: 4 });
  for (let i = 0; i < 3; i++) l.failed("first", "alice");
  l.failed("second", "alice");
  l.failed("third", "alice");
  expect(l.remembered()).toBe(4);
  expect(refused(l, "first", "alice")).toBe(false);
});
