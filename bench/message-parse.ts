/**
 * What reading a message strictly costs the proxy's hot path, in one process, no I/O: a small
 * tools/call body as the proxy handled it before — JSON.parse twice (tool policy, then audit trail) and the original
 * bytes sent on — against now: one strict parse (UTF-8 checked, member names checked at the levels the proxy reads)
 * and the checked message serialised again. Rounds alternate the two; the medians and their ratio are printed.
 *
 *   bun bench/message-parse.ts [--rounds 7] [--count 200000]
 */
import { readMessage, serialiseMessage } from "../src/proxy/message";

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const rounds = arg("rounds", 7);
const count = arg("count", 200_000);

const bodies = {
  "small tools/call": JSON.stringify({
    jsonrpc: "2.0",
    id: 42,
    method: "tools/call",
    params: { name: "search_code", arguments: { query: "useEffect cleanup", limit: 20 }, _meta: { progressToken: "p-42" } },
  }),
  "8 KiB of arguments": JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: {
      name: "write_file",
      arguments: {
        path: "/tmp/x",
        content: "lorem ipsum ".repeat(700),
        tags: Array.from({ length: 50 }, (_, i) => ({ i, v: i * 1.5 })),
      },
    },
  }),
};
const headers = new Headers({ "content-type": "application/json" });
const decoder = new TextDecoder();
let sink = 0;

function before(bytes: Uint8Array): void {
  const policy = JSON.parse(decoder.decode(bytes));
  const audit = JSON.parse(decoder.decode(bytes));
  sink += (policy.id as number) + (audit.id as number) + bytes.byteLength;
}

function after(bytes: Uint8Array): void {
  const read = readMessage(bytes, headers);
  if (!read.ok) throw new Error("refused");
  sink += serialiseMessage(read.message).byteLength;
}

const nsPerCall = (fn: (bytes: Uint8Array) => void, bytes: Uint8Array) => {
  const started = Bun.nanoseconds();
  for (let i = 0; i < count; i++) fn(bytes);
  return (Bun.nanoseconds() - started) / count;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

for (const [name, text] of Object.entries(bodies)) {
  const bytes = new TextEncoder().encode(text);
  const times = { before: [] as number[], after: [] as number[] };
  nsPerCall(before, bytes);
  nsPerCall(after, bytes);
  for (let round = 0; round < rounds; round++) {
    times.before.push(nsPerCall(before, bytes));
    times.after.push(nsPerCall(after, bytes));
  }
  const b = median(times.before);
  const a = median(times.after);
  console.log(
    `${name} (${bytes.byteLength} B): before ${(b / 1000).toFixed(2)} µs, after ${(a / 1000).toFixed(2)} µs, ratio ${(a / b).toFixed(2)}`,
  );
}
if (sink === 0) console.log("");
