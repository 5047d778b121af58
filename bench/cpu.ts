import { readFileSync } from "node:fs";

/** CPU time (user + system, ms) a process and its children used so far, from /proc (Linux). */
export function cpuMs(pid: number): number {
  const read = (p: number) => {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 100 Hz ticks
    } catch {
      return 0;
    }
  };
  const children = Bun.spawnSync(["ps", "-o", "pid=", "--ppid", String(pid)])
    .stdout.toString()
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  return read(pid) + children.reduce((n, c) => n + read(c), 0);
}
