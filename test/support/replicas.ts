import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForHttp } from "../peers/ports";
import { apiClient, ADMIN, type TestService } from "./service";
import { buildBinary, startBinary, type Started } from "./binary";
import type { Api } from "./api";
import { sharedPostgres } from "./store";

/** One replica: the compiled binary on its own loopback port. */
export type Replica = {
  url: string;
  port: number;
  /** Its log so far, one JSON line each. */
  lines(): string[];
  /** SIGKILL: gone at once, leases and all. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same settings. */
  restart(): Promise<void>;
};

export type Cluster = {
  /** The balancer (nginx, round-robin): what clients and the OAuth callback use. */
  url: string;
  replicas: Replica[];
  databaseUrl: string;
  /** The API through the balancer, as the administrator. */
  api: Api;
  stop(): Promise<void>;
};

export const NGINX_AVAILABLE = Bun.which("nginx") !== null;

/**
 * `count` replicas of the compiled binary on one PostgreSQL database (the test process's throwaway server), behind
 * Debian's nginx round-robin on loopback — the two-replicas-behind-nginx layout of docs/deployment.md, with no sticky
 * sessions. Each replica gets the same settings: SECRETS__KEY, the administrator's password, the balancer's URL as
 * SERVER__PUBLIC_URL.
 */
export async function startCluster(count = 3, env: Record<string, string> = {}): Promise<Cluster> {
  if (!NGINX_AVAILABLE) throw new Error("nginx is not installed: install Debian's nginx-light (.ci/run does)");
  await buildBinary();
  const work = mkdtempSync(join(tmpdir(), "cs-cluster-"));
  const databaseUrl = await (await sharedPostgres()).createDatabase();
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const balancerPort = await freePort();
  const url = `http://127.0.0.1:${balancerPort}`;
  const settings = {
    DATABASE__URL: databaseUrl,
    SECRETS__KEY: randomBytes(32).toString("base64"),
    AUTH__ADMIN_PASSWORD: ADMIN.password,
    SERVER__PUBLIC_URL: url,
    // As docs/deployment.md lays it out: nginx's X-Forwarded-For names the client.
    SERVER__TRUSTED_PROXIES: "127.0.0.1",
    SCHEDULER__INTERVAL_SECONDS: "1",
    LOG__LEVEL: "debug",
    ...env,
  };

  const replicas = await Promise.all(
    ports.map(async (port) => {
      let started: Started = await startBinary(work, { ...settings, SERVER__PORT: String(port) });
      const earlier: string[] = [];
      const replica: Replica = {
        url: `http://127.0.0.1:${port}`,
        port,
        lines: () => [...earlier, ...started.lines],
        async kill() {
          started.proc.kill("SIGKILL");
          await started.proc.exited;
        },
        async restart() {
          earlier.push(...started.lines);
          started = await startBinary(work, { ...settings, SERVER__PORT: String(port) });
        },
      };
      return Object.assign(replica, { stopGracefully: async () => (started.proc.kill("SIGTERM"), await started.proc.exited) });
    }),
  );

  // No keep-alive to the replicas: each request opens its own connection, so a killed replica is a refused
  // connection that nginx passes on to the next one (even for POST: nothing was sent).
  writeFileSync(
    join(work, "nginx.conf"),
    `worker_processes 1;
pid ${work}/nginx.pid;
error_log ${work}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${work}/body;
  proxy_temp_path ${work}/proxy;
  upstream replicas {
${ports.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join("\n")}
  }
  server {
    listen 127.0.0.1:${balancerPort};
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout;
    }
  }
}
`,
  );
  const nginx = Bun.spawn(["nginx", "-p", work, "-c", join(work, "nginx.conf"), "-g", "daemon off;"], {
    stdout: "ignore",
    stderr: "pipe",
  });
  await waitForHttp(`${url}/healthz`);

  return {
    url,
    replicas,
    databaseUrl,
    api: apiClient(url),
    async stop() {
      nginx.kill("SIGTERM");
      await nginx.exited;
      await Promise.all(replicas.map((r) => r.stopGracefully().catch(() => undefined)));
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** A replica as the helpers for a service under test want it (its URL and an API client). */
export const asService = (replica: Replica): Pick<TestService, "url" | "api"> => ({
  url: replica.url,
  api: apiClient(replica.url),
});
