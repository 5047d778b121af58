import { existsSync, readdirSync } from "node:fs";
import type { Registry } from "./registry";

const FD_DIR = "/proc/self/fd";

/**
 * The process's own metrics, read when scraped, under the names Prometheus client libraries use
 * (https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics), plus `…_build_info`.
 */
export function registerProcessMetrics(registry: Registry, build: { version: string }): void {
  registry.sampled("process_resident_memory_bytes", "Resident memory size in bytes", "gauge", () => process.memoryUsage.rss());
  registry.sampled("process_heap_bytes", "JavaScript heap in use, in bytes", "gauge", () => process.memoryUsage().heapUsed);
  registry.sampled("process_cpu_seconds_total", "User and system CPU time spent, in seconds", "counter", () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  });
  // The wall-clock time the process started (performance's origin), not the services' injectable clock.
  const started = performance.timeOrigin / 1000;
  registry.sampled(
    "process_start_time_seconds",
    "Start time of the process since the Unix epoch, in seconds",
    "gauge",
    () => started,
  );
  // Linux only; elsewhere the metric is left out rather than shown as a made-up value.
  if (existsSync(FD_DIR)) {
    registry.sampled("process_open_fds", "Open file descriptors", "gauge", () => {
      try {
        // The listing opens one descriptor of its own, gone again by the time it returns.
        return readdirSync(FD_DIR).length - 1;
      } catch {
        return undefined;
      }
    });
  }
  registry.info("connector_service_build_info", "The running version of connector-service and of Bun, as labels (always 1)", {
    version: build.version,
    bun: Bun.version,
  });
}
