/**
 * A small Prometheus registry (text exposition format 0.0.4): counters, gauges and histograms, most with at most one
 * label. Updates sit on the proxy's hot path, so each is one map lookup and an add; label values are escaped only when
 * scraped.
 */
const escape = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const series = (name: string, label: string | undefined, value: string, extra = "") => {
  const labels = [label === undefined ? "" : `${label}="${escape(value)}"`, extra].filter(Boolean).join(",");
  return labels ? `${name}{${labels}}` : name;
};

export type Counter = { inc(labelValue?: string, by?: number): void };
/** A counter labelled by an HTTP status, kept by the number itself: counting allocates no label string. */
export type StatusCounter = { inc(status: number): void };
export type Histogram = { observe(value: number): void };
/** A counter with several labels, their values given in the labels' order. */
export type LabelledCounter = { inc(values: readonly string[]): void };
/** A histogram with one label: a set of buckets per label value. */
export type LabelledHistogram = { observe(labelValue: string, value: number): void };
/** A histogram with several labels: a set of buckets per combination of values, given in the labels' order. */
export type MultiLabelHistogram = { observe(labelValues: readonly string[], value: number): void };
export type UpDown = { inc(): void; dec(): void };

type Metric = { name: string; help: string; type: string; render(): string[] | Promise<string[]> };

/** One histogram's counts; `labels`: its other labels, rendered before `le` (each ending in a comma). */
function histogramValues(buckets: number[]) {
  const counts = buckets.map(() => 0);
  let sum = 0;
  let count = 0;
  return {
    observe(value: number) {
      const i = buckets.findIndex((le) => value <= le);
      if (i >= 0) counts[i]!++;
      sum += value;
      count++;
    },
    render(name: string, labels: string): string[] {
      let cumulative = 0;
      const lines = buckets.map((le, i) => `${name}_bucket{${labels}le="${le}"} ${(cumulative += counts[i]!)}`);
      const others = labels ? `{${labels.slice(0, -1)}}` : "";
      return [
        ...lines,
        `${name}_bucket{${labels}le="+Inf"} ${count}`,
        `${name}_sum${others} ${sum}`,
        `${name}_count${others} ${count}`,
      ];
    },
  };
}

export function createRegistry() {
  const metrics: Metric[] = [];

  return {
    /** `initial`: label values shown (at 0) before they first happen, so a scraper sees stable series. */
    counter(name: string, help: string, label?: string, initial: readonly string[] = []): Counter {
      const values = new Map<string, number>(initial.map((value) => [value, 0]));
      metrics.push({ name, help, type: "counter", render: () => [...values].map(([k, v]) => `${series(name, label, k)} ${v}`) });
      return { inc: (labelValue = "", by = 1) => values.set(labelValue, (values.get(labelValue) ?? 0) + by) };
    },

    statusCounter(name: string, help: string): StatusCounter {
      const values = new Map<number, number>();
      metrics.push({
        name,
        help,
        type: "counter",
        render: () => [...values].sort(([a], [b]) => a - b).map(([status, v]) => `${name}{status="${status}"} ${v}`),
      });
      return { inc: (status) => void values.set(status, (values.get(status) ?? 0) + 1) };
    },

    upDown(name: string, help: string): UpDown {
      let value = 0;
      metrics.push({ name, help, type: "gauge", render: () => [`${name} ${value}`] });
      return { inc: () => void value++, dec: () => void value-- };
    },

    /**
     * A gauge whose values are read when scraped (e.g. connectors by state, from the database). Every label value in
     * `always` is shown, at 0 when `read` has none: a series that comes and goes reads as missing data, not as zero.
     */
    gauge(
      name: string,
      help: string,
      label: string,
      read: () => Promise<[string, number][]>,
      always: readonly string[] = [],
    ): void {
      metrics.push({
        name,
        help,
        type: "gauge",
        render: async () => {
          const values = new Map<string, number>(always.map((value) => [value, 0]));
          for (const [k, v] of await read()) values.set(k, v);
          return [...values].map(([k, v]) => `${series(name, label, k)} ${v}`);
        },
      });
    },

    /** One unlabelled value read when scraped (the process's memory, CPU time …); `undefined`: no sample this time. */
    sampled(name: string, help: string, type: "gauge" | "counter", read: () => number | undefined): void {
      metrics.push({
        name,
        help,
        type,
        render: () => {
          const value = read();
          return value === undefined ? [] : [`${name} ${value}`];
        },
      });
    },

    /** A constant 1 whose labels say what runs (`…_build_info`, the Prometheus convention for versions). */
    info(name: string, help: string, labels: Record<string, string>): void {
      const line = `${name}{${Object.entries(labels)
        .map(([k, v]) => `${k}="${escape(v)}"`)
        .join(",")}} 1`;
      metrics.push({ name, help, type: "gauge", render: () => [line] });
    },

    histogram(name: string, help: string, buckets: number[]): Histogram {
      const values = histogramValues(buckets);
      metrics.push({ name, help, type: "histogram", render: () => values.render(name, "") });
      return { observe: values.observe };
    },

    /** `labels`: the label names, in the order `inc` is given their values. */
    labelledCounter(name: string, help: string, labels: readonly string[]): LabelledCounter {
      const values = new Map<string, { labels: readonly string[]; value: number }>();
      metrics.push({
        name,
        help,
        type: "counter",
        render: () =>
          [...values.values()].map(
            (v) => `${name}{${labels.map((label, i) => `${label}="${escape(v.labels[i] ?? "")}"`).join(",")}} ${v.value}`,
          ),
      });
      return {
        inc(labelValues) {
          const key = labelValues.join("\u0000");
          const current = values.get(key);
          if (current) current.value++;
          else values.set(key, { labels: [...labelValues], value: 1 });
        },
      };
    },

    labelledHistogram(name: string, help: string, label: string, buckets: number[]): LabelledHistogram {
      const series = new Map<string, ReturnType<typeof histogramValues>>();
      metrics.push({
        name,
        help,
        type: "histogram",
        render: () => [...series].flatMap(([value, values]) => values.render(name, `${label}="${escape(value)}",`)),
      });
      return {
        observe(labelValue, value) {
          let values = series.get(labelValue);
          if (!values) series.set(labelValue, (values = histogramValues(buckets)));
          values.observe(value);
        },
      };
    },

    /** `labels`: the label names, in the order `observe` is given their values. */
    multiLabelHistogram(name: string, help: string, labels: readonly string[], buckets: number[]): MultiLabelHistogram {
      const series = new Map<string, { labels: string; values: ReturnType<typeof histogramValues> }>();
      metrics.push({
        name,
        help,
        type: "histogram",
        render: () => [...series.values()].flatMap((s) => s.values.render(name, s.labels)),
      });
      return {
        observe(labelValues, value) {
          const key = labelValues.join("\u0000");
          let entry = series.get(key);
          if (!entry) {
            const rendered = labels.map((label, i) => `${label}="${escape(labelValues[i] ?? "")}",`).join("");
            series.set(key, (entry = { labels: rendered, values: histogramValues(buckets) }));
          }
          entry.values.observe(value);
        },
      };
    },

    async render(): Promise<string> {
      const blocks = await Promise.all(
        metrics.map(async (m) => [`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...(await m.render())]),
      );
      return `${blocks.flat().join("\n")}\n`;
    },
  };
}
export type Registry = ReturnType<typeof createRegistry>;
