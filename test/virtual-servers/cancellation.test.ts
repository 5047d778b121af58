import { describe, expect, test } from "bun:test";
import { Cancel, cancellationOf } from "../../src/virtual-servers/cancellation";

// A client's request being served, cancelled by its notifications/cancelled or its session's end
// (src/virtual-servers/cancellation.ts): the callbacks, and the AbortSignal made only for code that takes one.
describe("a client's cancellation", () => {
  test("runs each callback still wanted once, with the reason, and none given after", () => {
    const cancel = new Cancel();
    const ran: string[] = [];
    cancel.onAbort(() => ran.push(`a:${String(cancel.reason)}`));
    const forget = cancel.onAbort(() => ran.push("forgotten"));
    cancel.onAbort(() => ran.push("b"));
    forget();
    forget();
    cancel.abort("Cancelled by the client");
    cancel.abort("again");
    cancel.onAbort(() => ran.push("late"));
    expect(ran).toEqual(["a:Cancelled by the client", "b"]);
    expect(cancel.aborted).toBe(true);
  });

  test("its signal, asked for before or after, is aborted with the same reason", () => {
    const before = new Cancel();
    const signal = before.signal;
    expect(signal.aborted).toBe(false);
    before.abort("The client session ended");
    expect([signal.aborted, signal.reason]).toEqual([true, "The client session ended"]);

    const after = new Cancel();
    after.abort("gone");
    expect([after.signal.aborted, after.signal.reason]).toEqual([true, "gone"]);
  });

  test("an AbortSignal as one: its abort runs the callbacks not forgotten", () => {
    const controller = new AbortController();
    const cancellation = cancellationOf(controller.signal);
    const ran: string[] = [];
    cancellation.onAbort(() => ran.push("kept"));
    cancellation.onAbort(() => ran.push("forgotten"))();
    controller.abort("timed out");
    expect(ran).toEqual(["kept"]);
    expect([cancellation.aborted, cancellation.reason]).toEqual([true, "timed out"]);
  });
});
