/**
 * The load generator: `concurrency` clients send tools/call until `count` requests are done, and it
 * prints throughput and latency percentiles as JSON. A separate process, so it measures the target,
 * not itself. Run: bun bench/load.ts <url> <count> <concurrency> [authorization] [tool]
 * (the tool defaults to `ping`, the bench upstream's; a tool policy may have renamed it).
 */
const [url, countArg, concurrencyArg, authorization, tool = "ping"] = process.argv.slice(2);
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
const headers: Record<string, string> = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
};
if (authorization) headers.authorization = authorization;
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } });

const latencies = new Float64Array(count);
let next = 0;
let failures = 0;
async function client() {
  for (let i = next++; i < count; i = next++) {
    const start = performance.now();
    const response = await fetch(url!, { method: "POST", headers, body });
    const text = await response.text();
    latencies[i] = performance.now() - start;
    if (response.status !== 200 || !text.includes("pong")) failures++;
  }
}
const started = performance.now();
await Promise.all(Array.from({ length: concurrency }, client));
const seconds = (performance.now() - started) / 1000;
const sorted = [...latencies].sort((a, b) => a - b);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
console.log(
  JSON.stringify({ count, concurrency, failures, rps: count / seconds, p50_ms: at(0.5), p90_ms: at(0.9), p99_ms: at(0.99) }),
);

export {};
