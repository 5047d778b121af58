/**
 * A request that can be cancelled (MCP 2025-11-25 basic/utilities/cancellation: the client's notifications/cancelled,
 * its session's end, a listing's time bound), as the code serving it needs it: whether and why, a callback, and an
 * AbortSignal only for the code that takes one (the SDK client's requests). A call sent without the SDK client
 * (plain-request.ts) asks for no signal: an AbortController and an event listener for every call cost it ~2 µs
 * (bench/RESULTS.md "Virtual servers").
 */
export interface Cancellation {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `then` once, when cancelled (never if it is already); returns what forgets it. */
  onAbort(then: () => void): () => void;
  /** The same cancellation as an AbortSignal. */
  readonly signal: AbortSignal;
}

/** A client's request being served: cancelled by `abort`. */
export class Cancel implements Cancellation {
  #aborted = false;
  #reason: unknown;
  /** Its callbacks: mostly one (the member call serving it), so an array and not a set. */
  #then: (() => void)[] | undefined;
  #controller: AbortController | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }
  get reason(): unknown {
    return this.#reason;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const then = this.#then;
    this.#then = undefined;
    if (then) for (const f of then) f();
  }

  onAbort(then: () => void): () => void {
    if (this.#aborted) return () => undefined;
    const callbacks = (this.#then ??= []);
    callbacks.push(then);
    // The last one given first: the callback forgotten is mostly the one just added.
    return () => {
      const at = callbacks.lastIndexOf(then);
      if (at >= 0) callbacks.splice(at, 1);
    };
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }
}

/** An AbortSignal as a cancellation (a listing's time bound, AbortSignal.timeout). */
export function cancellationOf(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason() {
      return signal.reason;
    },
    onAbort(then) {
      if (signal.aborted) return () => undefined;
      const listener = () => then();
      signal.addEventListener("abort", listener, { once: true });
      return () => signal.removeEventListener("abort", listener);
    },
    signal,
  };
}
