/**
 * A small Prometheus registry (text exposition format 0.0.4): counters, gauges read at scrape time,
 * and histograms. The service needs only these, and each update is a map lookup and an add.
 */
type Labels = Record<string, string>;

const labelKey = (labels: Labels) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`)
    .join(",");

export type Counter = { inc(labels?: Labels, by?: number): void };
export type Histogram = { observe(value: number, labels?: Labels): void };
export type UpDown = { inc(labels?: Labels): void; dec(labels?: Labels): void };

type Metric = { name: string; help: string; type: string; render(): string[] };

export function createRegistry() {
  const metrics: Metric[] = [];

  return {
    counter(name: string, help: string): Counter {
      const values = new Map<string, number>();
      metrics.push({ name, help, type: "counter", render: () => [...values].map(([k, v]) => `${name}${k ? `{${k}}` : ""} ${v}`) });
      return { inc: (labels = {}, by = 1) => values.set(labelKey(labels), (values.get(labelKey(labels)) ?? 0) + by) };
    },

    upDown(name: string, help: string): UpDown {
      const values = new Map<string, number>();
      metrics.push({ name, help, type: "gauge", render: () => [...values].map(([k, v]) => `${name}${k ? `{${k}}` : ""} ${v}`) });
      const add = (labels: Labels, by: number) => values.set(labelKey(labels), (values.get(labelKey(labels)) ?? 0) + by);
      return { inc: (labels = {}) => add(labels, 1), dec: (labels = {}) => add(labels, -1) };
    },

    /** A gauge whose values are read when scraped (e.g. connectors by state, from the database). */
    gauge(name: string, help: string, read: () => [Labels, number][]): void {
      metrics.push({
        name,
        help,
        type: "gauge",
        render: () => read().map(([labels, v]) => `${name}${Object.keys(labels).length ? `{${labelKey(labels)}}` : ""} ${v}`),
      });
    },

    histogram(name: string, help: string, buckets: number[]): Histogram {
      const series = new Map<string, { counts: number[]; sum: number; count: number }>();
      metrics.push({
        name,
        help,
        type: "histogram",
        render: () =>
          [...series].flatMap(([k, s]) => {
            const prefix = k ? `${k},` : "";
            let cumulative = 0;
            const lines = buckets.map((le, i) => {
              cumulative += s.counts[i]!;
              return `${name}_bucket{${prefix}le="${le}"} ${cumulative}`;
            });
            lines.push(`${name}_bucket{${prefix}le="+Inf"} ${s.count}`);
            lines.push(`${name}_sum${k ? `{${k}}` : ""} ${s.sum}`, `${name}_count${k ? `{${k}}` : ""} ${s.count}`);
            return lines;
          }),
      });
      return {
        observe(value, labels = {}) {
          const key = labelKey(labels);
          let s = series.get(key);
          if (!s) series.set(key, (s = { counts: buckets.map(() => 0), sum: 0, count: 0 }));
          const i = buckets.findIndex((le) => value <= le);
          if (i >= 0) s.counts[i]!++;
          s.sum += value;
          s.count++;
        },
      };
    },

    render(): string {
      return `${metrics
        .flatMap((m) => [`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...m.render()])
        .join("\n")}\n`;
    },
  };
}
export type Registry = ReturnType<typeof createRegistry>;
