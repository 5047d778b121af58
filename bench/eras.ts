/**
 * 2026-07-28 clients of a 2025-only server (docs/behaviour.md "Protocol eras"), in one run beside their baselines:
 *
 * - throughput and CPU: a 2026-07-28 `tools/call` through the era bridge against a 2025 client's through the plain
 *   proxy (wrk, alternating slices; the target ≥ 0.9×), and p50 at one connection;
 * - a parked call: the upstream asks its client during the call (`ask`: an elicitation request on the call's stream);
 *   a 2026-07-28 client gets `input_required` and retries with its answer, against a 2025 client answering the same
 *   question directly at the upstream (target: ≤ 2 ms p50 added).
 *
 *   npm run build && bun bench/eras.ts [--rounds 3] [--seconds 4] [--concurrency 32] [--latency-count 2000] [--parked 300]
 *                                      [--upstream bench|everything]
 *
 * One service (the compiled binary when dist/ has it, else the source) and one upstream: the bench upstream
 * (bench/upstream.ts: 2025, stateless JSON, and `ask`; the default — its own work is the least, so the service's share
 * is the most), or with `--upstream everything` the reference server (server-everything over Streamable HTTP: 2025
 * sessions, event-stream answers, `echo` called; no parked calls). Every process binds 127.0.0.1 and is stopped at the end.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { EVERYTHING } from "../test/peers/everything";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";
import { benchChildren, runBench } from "./children";
import { cpuMs } from "./cpu";
import { startProxiedService, wrk } from "./proxied";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const ROUNDS = Number(args.get("rounds") ?? 3);
const SECONDS = Number(args.get("seconds") ?? 4);
const CONCURRENCY = Number(args.get("concurrency") ?? 32);
const LATENCY_COUNT = Number(args.get("latency-count") ?? 2000);
const EVERYTHING_UPSTREAM = args.get("upstream") === "everything";
const PARKED = EVERYTHING_UPSTREAM ? 0 : Number(args.get("parked") ?? 300);
/** The tool called, and its arguments. */
const TOOL = EVERYTHING_UPSTREAM ? { name: "echo", arguments: { message: "hi" } } : { name: "ping", arguments: {} };
const MODERN = "2026-07-28";

const work = mkdtempSync(join(tmpdir(), "cs-bench-eras-"));
const children = benchChildren();

const envelope = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
};
const call = (name: string, id: number | string = 1, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: name === TOOL.name ? TOOL.arguments : {}, ...extra, _meta: envelope },
  });
const modernHeaders = (name: string) => ({ "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const port = await freePort();
  children.track(
    EVERYTHING_UPSTREAM
      ? Bun.spawn(["node", EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdout: "ignore" })
      : Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(port)], { stdout: "ignore" }),
  );
  const upstream = `http://127.0.0.1:${port}/mcp`;
  await waitFor(upstream);
  const binary = join(ROOT, "dist/connector-service");
  const command = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, "src/index.ts")];
  const service = await startProxiedService(command, join(work, "service"), upstream);
  children.track(service.proc);
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(service.url, {
      method: "POST",
      headers: {
        authorization: service.auth,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        ...headers,
      },
      body,
    });
  // The bridge opens on the first 2026-07-28 request.
  const first = await (await post(call(TOOL.name), modernHeaders(TOOL.name))).json();
  if (first.result?.resultType !== "complete") throw new Error(`the bridge did not answer: ${JSON.stringify(first)}`);
  // A 2025 client's session, when the server keeps sessions (the bench upstream keeps none).
  const initialized = await post(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
    }),
  );
  await initialized.text();
  const session = initialized.headers.get("mcp-session-id") ?? undefined;
  const inSession: Record<string, string> = session ? { "mcp-session-id": session } : {};
  if (session) await (await post('{"jsonrpc":"2.0","method":"notifications/initialized"}', inSession)).text();
  const legacyCall = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: TOOL });

  // Throughput and CPU, alternating slices.
  const slices: Record<"legacy" | "modern", { rps: number[]; cpu: number[] }> = {
    legacy: { rps: [], cpu: [] },
    modern: { rps: [], cpu: [] },
  };
  for (let round = 0; round < ROUNDS; round++)
    for (const era of ["legacy", "modern"] as const) {
      const before = cpuMs(service.proc.pid);
      const r =
        era === "legacy"
          ? await wrk(service.url, CONCURRENCY, SECONDS, service.auth, { body: legacyCall, ...(session && { session }) })
          : await wrk(service.url, CONCURRENCY, SECONDS, service.auth, {
              body: call(TOOL.name),
              headers: modernHeaders(TOOL.name),
            });
      if (r.failures > 0) throw new Error(`${era}: ${r.failures} failures`);
      slices[era].rps.push(r.rps);
      slices[era].cpu.push(((cpuMs(service.proc.pid) - before) * 1000) / r.count);
    }

  // p50 at one connection.
  const timed = async (send: () => Promise<Response>) => {
    const times: number[] = [];
    for (let i = 0; i < LATENCY_COUNT; i++) {
      const t0 = performance.now();
      await (await send()).text();
      times.push(performance.now() - t0);
    }
    return median(times);
  };
  const legacyP50 = await timed(() => post(legacyCall, inSession));
  const modernP50 = await timed(() => post(call(TOOL.name), modernHeaders(TOOL.name)));

  // Parked calls: input_required, then the retry, through the bridge …
  const answer = { action: "accept", content: {} };
  const parked: number[] = [];
  for (let i = 0; i < PARKED; i++) {
    const t0 = performance.now();
    const asked = await (await post(call("ask", 1), modernHeaders("ask"))).json();
    const { inputRequests, requestState } = asked.result;
    const key = Object.keys(inputRequests)[0]!;
    const done = await (
      await post(call("ask", 2, { inputResponses: { [key]: answer }, requestState }), modernHeaders("ask"))
    ).json();
    if (done.result?.resultType !== "complete") throw new Error(`the parked call did not complete: ${JSON.stringify(done)}`);
    parked.push(performance.now() - t0);
  }
  // … against a 2025 client answering the upstream's question on the call's own stream, directly.
  const direct: number[] = [];
  const decoder = new TextDecoder();
  for (let i = 0; i < PARKED; i++) {
    const t0 = performance.now();
    const response = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}',
    });
    const reader = response.body!.getReader();
    let text = "";
    let answered = false;
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += decoder.decode(chunk.value);
      const question = !answered && /"id":"(q-\d+)"/.exec(text);
      if (question) {
        answered = true;
        await fetch(upstream, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: question[1], result: answer }),
        });
      }
    }
    if (!text.includes('"pong"')) throw new Error(`no result directly: ${text}`);
    direct.push(performance.now() - t0);
  }

  const rps = { legacy: median(slices.legacy.rps), modern: median(slices.modern.rps) };
  const cpu = { legacy: median(slices.legacy.cpu), modern: median(slices.modern.cpu) };
  console.log(
    `\nMCP eras (${EVERYTHING_UPSTREAM ? "server-everything" : "the bench upstream"}): ${ROUNDS} rounds, medians; wrk ${SECONDS} s a slice at concurrency ${CONCURRENCY}; ${LATENCY_COUNT} calls at c=1; ${PARKED} parked calls\n`,
  );
  console.log("client → server                          req/s   CPU us/req   p50 c=1 ms");
  console.log(
    `2025 client, plain proxy             ${rps.legacy.toFixed(0).padStart(8)}   ${cpu.legacy.toFixed(1).padStart(10)}   ${legacyP50.toFixed(3).padStart(10)}`,
  );
  console.log(
    `2026-07-28 client, era bridge        ${rps.modern.toFixed(0).padStart(8)}   ${cpu.modern.toFixed(1).padStart(10)}   ${modernP50.toFixed(3).padStart(10)}`,
  );
  console.log(
    `\nbridge / plain proxy: ${(rps.modern / rps.legacy).toFixed(3)}x throughput (target >= 0.9), ${(cpu.modern / cpu.legacy).toFixed(2)}x CPU per request, +${(modernP50 - legacyP50).toFixed(3)} ms p50 at c=1`,
  );
  if (PARKED === 0) return;
  const [p, d] = [median(parked), median(direct)];
  console.log(
    `parked call (input_required → retry → result) p50 ${p.toFixed(3)} ms; the upstream's own (a 2025 client answering on the call's stream) ${d.toFixed(3)} ms: +${(p - d).toFixed(3)} ms (target <= 2)`,
  );
}

await runBench(main, async () => {
  await children.stopAll();
  rmSync(work, { recursive: true, force: true });
});
