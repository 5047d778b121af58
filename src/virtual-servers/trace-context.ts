import { AsyncLocalStorage } from "node:async_hooks";
import type { Traced } from "../observability/tracing";

/**
 * The span of the virtual server request being served, for the member requests made while serving it: the SDK client
 * sends them from inside that request's asynchronous context, so each finds the span here and names it in its
 * `traceparent` ([W3C Trace Context](https://www.w3.org/TR/trace-context/)); the member's proxy span (proxy/observe.ts)
 * then continues it, a child of the virtual server's span.
 */
const current = new AsyncLocalStorage<Traced>();

/** Runs `serve` with `span` as the span its member requests continue (tracing off: `span` undefined, as is). */
export const withSpan = <T>(span: Traced | undefined, serve: () => Promise<T>): Promise<T> =>
  span ? current.run(span, serve) : serve();

/** Names the current request's span in a member request's headers, if there is one (else its headers are not read). */
export const injectSpan = (request: Request): void => current.getStore()?.inject(request.headers);
