import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createTestApp } from "../support/app";
import { VERSION } from "../../src/version";
import { scrape } from "./scrape";

test("process metrics are read at scrape time, named and typed as Prometheus client libraries name them, with plausible values", async () => {
  const t = await createTestApp();
  try {
    const { text, samples } = await scrape(t);
    const types: Record<string, string> = {
      process_resident_memory_bytes: "gauge",
      process_heap_bytes: "gauge",
      process_cpu_seconds_total: "counter",
      process_start_time_seconds: "gauge",
      connector_service_build_info: "gauge",
    };
    if (existsSync("/proc/self/fd")) types.process_open_fds = "gauge";
    for (const [name, type] of Object.entries(types)) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S.*$`, "m"));
      expect(text).toContain(`# TYPE ${name} ${type}\n`);
    }

    const rss = samples.get("process_resident_memory_bytes")!;
    expect(rss).toBeGreaterThan(1024 * 1024);
    expect(rss).toBeLessThan(64 * 1024 ** 3);
    const heap = samples.get("process_heap_bytes")!;
    expect(heap).toBeGreaterThan(0);
    expect(heap).toBeLessThan(rss);
    const cpu = samples.get("process_cpu_seconds_total")!;
    expect(cpu).toBeGreaterThan(0);
    // Real wall time, not the app's stepped clock: the process started before now and at most its uptime ago.
    const started = samples.get("process_start_time_seconds")!;
    const now = Date.now() / 1000;
    expect(started).toBeLessThanOrEqual(now);
    expect(started).toBeGreaterThanOrEqual(now - process.uptime() - 5);
    if (existsSync("/proc/self/fd")) {
      const fds = samples.get("process_open_fds")!;
      expect(fds).toBeGreaterThanOrEqual(3); // stdin, stdout, stderr at least
      expect(fds).toBeLessThan(100_000);
    } else {
      expect(text).not.toContain("process_open_fds");
    }
    expect(samples.get(`connector_service_build_info{version="${VERSION}",bun="${Bun.version}"}`)).toBe(1);

    // Evaluated again at every scrape: CPU time only grows.
    for (let i = 0; i < 200_000; i++) Math.sqrt(i);
    expect((await scrape(t)).samples.get("process_cpu_seconds_total")!).toBeGreaterThanOrEqual(cpu);
  } finally {
    await t.close();
  }
});

test("connectors{state} shows every state, at 0 when no connector is in it, so the series never come and go", async () => {
  const t = await createTestApp();
  try {
    const states = async () =>
      Object.fromEntries(
        [...(await scrape(t)).samples]
          .filter(([s]) => s.startsWith("connectors{"))
          .map(([s, v]) => [/state="(\w+)"/.exec(s)![1]!, v]),
      );
    expect(await states()).toEqual({ created: 0, auth_required: 0, connected: 0, disconnected: 0 });
    await t.api("POST", "/api/v1/connectors", { body: { url: "https://a.example/mcp" } });
    await t.api("POST", "/api/v1/connectors", { body: { url: "https://b.example/mcp" } });
    expect(await states()).toEqual({ created: 2, auth_required: 0, connected: 0, disconnected: 0 });
  } finally {
    await t.close();
  }
});
