import { writeSync } from "node:fs";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export type Logger = {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
};

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * Last line of defence: a field whose name says it holds a credential is masked even if a caller
 * passes one by mistake. Callers still must not log secrets.
 */
const SECRET_FIELD = /authorization|password|secret|token|cookie|verifier|^key$/i;

export type LoggerOptions = { level: LogLevel; write?: (line: string) => void; clock?: () => number };

/** Every buffered stdout writer: what `flushLogs` waits for. */
const writers = new Set<() => Promise<unknown>>();

/**
 * Lines written in one event-loop turn leave in one write: under load the request log costs one write per turn
 * instead of one per request. Writes are chained through `Bun.write`, whose promise says when stdout has taken them:
 * Bun drops stdout writes still queued for a slow reader when the process exits, so `flushLogs` waits for the chain
 * before an exit (the last lines of a shutdown were lost that way).
 */
export function bufferedStdout(): (line: string) => void {
  let lines: string[] = [];
  let scheduled = false;
  let written: Promise<unknown> = Promise.resolve();
  const flush = () => {
    scheduled = false;
    if (lines.length === 0) return;
    const out = `${lines.join("\n")}\n`;
    lines = [];
    written = written.then(() => Bun.write(Bun.stdout, out)).catch(() => undefined);
  };
  writers.add(() => {
    flush();
    return written;
  });
  // An exit nobody flushed for (a crash): what is still buffered is written as it can be.
  process.once("exit", () => {
    if (lines.length > 0) {
      try {
        writeSync(1, `${lines.join("\n")}\n`);
      } catch {
        // stdout is gone or full: nothing more to do at exit
      }
    }
  });
  return (line) => {
    lines.push(line);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

/** Writes what the loggers hold and waits until stdout has taken all of it (at most `timeoutMs`): before an exit. */
export async function flushLogs(timeoutMs = 2_000): Promise<void> {
  await Promise.race([Promise.all([...writers].map((drained) => drained())), Bun.sleep(timeoutMs)]);
}

export function createLogger(options: LoggerOptions, base: LogFields = {}): Logger {
  const write = options.write ?? bufferedStdout();
  const clock = options.clock ?? Date.now;
  const min = ORDER[options.level];
  // One ISO time string per millisecond: under load many lines share it.
  let lastMs = Number.NaN;
  let lastTime = "";
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[level] < min) return;
    const ms = clock();
    if (ms !== lastMs) {
      lastMs = ms;
      lastTime = new Date(ms).toISOString();
    }
    write(JSON.stringify(redact({ time: lastTime, level, msg, ...base, ...fields })));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    // A child writes through its parent's writer: one buffer, so lines leave in the order they were logged.
    child: (fields) => createLogger({ ...options, write }, { ...base, ...fields }),
  };
}

/** True when `value` has nothing to mask: no nested object, no string field with a credential's name (the request log). */
function plain(value: object): boolean {
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    if ((field !== null && typeof field === "object") || (typeof field === "string" && SECRET_FIELD.test(key))) return false;
  }
  return true;
}

/** Masks string fields with a credential's name, at any depth (one pass over the keys, not a JSON replacer). */
function redact<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (!Array.isArray(value) && plain(value)) return value;
  if (Array.isArray(value)) return value.map(redact) as T;
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    out[key] = SECRET_FIELD.test(key) && typeof field === "string" ? "********" : redact(field);
  }
  return out as T;
}
