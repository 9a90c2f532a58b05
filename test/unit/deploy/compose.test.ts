import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import {
  DEFAULT_SOCKET_DIR,
  dockerRuntimeOptionsSchema,
} from "../../../src/runtime/docker/docker-runtime-options.js";
import {
  buildOf,
  type ComposeFile,
  type ComposeService,
  commandOf,
  compose,
  composeEnv,
  environmentOf,
  mountedAt,
  mountsOf,
  publishedPorts,
  sandboxBundleDir,
  service,
} from "./compose-file.js";
import { durationMs, interpolate, interpolateAll, readText, readYaml, repoPath } from "./deploy-files.js";

const GATEWAY_DOCKERFILE = repoPath("deploy/gateway/Dockerfile");
const CONFIG_PATH = "/etc/sandpool/sandpool.yaml";

const gateway = service("gateway");
const migrate = service("migrate");
const gatewayEnv = environmentOf(gateway);

/** The gateway's configuration as `sandpool serve` would load it inside compose. */
function gatewayConfig() {
  return loadGatewayConfig({ file: mountedAt(gateway, CONFIG_PATH), env: gatewayEnv });
}

describe("the interpolation these tests apply", () => {
  it("follows compose: defaults for unset or empty, required values, $$", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: compose's syntax, not a template
    expect(interpolate("${A:-x}/${B-y}/${C:-z}/$$HOME", { A: "", B: "" })).toBe("x//z/$HOME");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: compose's syntax, not a template
    expect(() => interpolate("${D:?set D}", {})).toThrow("D must be set: set D");
  });
});

describe("docker-compose.yml", () => {
  it("has the stack's services, monitoring behind a profile", () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      [
        "gateway",
        "grafana",
        "migrate",
        "postgres",
        "prometheus",
        "redis",
        "sandbox-image",
        "sandbox-datascience-image",
        "socket-dir",
      ].sort(),
    );
    expect(service("prometheus").profiles).toEqual(["monitoring"]);
    expect(service("grafana").profiles).toEqual(["monitoring"]);
    for (const name of [
      "postgres",
      "redis",
      "sandbox-image",
      "sandbox-datascience-image",
      "socket-dir",
      "migrate",
      "gateway",
    ])
      expect(service(name).profiles, name).toBeUndefined();
  });

  it("gives every service an image that exists or is built here, from no named registry", () => {
    for (const [name, entry] of Object.entries(compose.services)) {
      expect(entry.image, name).toBeTruthy();
      // A pinned tag, and the first path part is no host: nothing names a registry.
      expect(entry.image, name).toMatch(/^[a-z0-9_-]+(\/[a-z0-9._-]+)*:[\w.-]+$/);
      const parts = entry.image!.split("/");
      if (parts.length > 1) expect(parts[0], name).not.toMatch(/[.:]|^localhost$/);
      expect(entry.image, name).not.toMatch(/:latest$/);
      const build = buildOf(entry);
      if (!build) continue;
      expect(existsSync(build.dockerfile), `${name}: ${build.dockerfile}`).toBe(true);
      // The sandbox image's context is the server bundle, made by `npm run build:sandbox-bundle`
      // and not committed: it is right when it is where bundle.mjs writes.
      if (!existsSync(build.context)) expect(build.context, name).toBe(sandboxBundleDir());
      else expect(statSync(build.context).isDirectory(), name).toBe(true);
    }
  });

  it("builds the sandbox images the pools run from deploy/sandbox/Dockerfile's two targets", () => {
    const sandbox = service("sandbox-image");
    const dataScience = service("sandbox-datascience-image");
    expect(buildOf(sandbox)).toEqual({
      context: sandboxBundleDir(),
      dockerfile: repoPath("deploy/sandbox/Dockerfile"),
      target: "sandbox",
    });
    expect(buildOf(dataScience)).toEqual({
      context: sandboxBundleDir(),
      dockerfile: repoPath("deploy/sandbox/Dockerfile"),
      target: "datascience",
    });
    expect(sandbox.image).toBe("sandpool/sandbox:dev");
    expect(dataScience.image).toBe("sandpool/sandbox-datascience:dev");
    const stages = [...readText("deploy/sandbox/Dockerfile").matchAll(/^FROM \S+ AS (\S+)$/gm)].map(
      (m) => m[1],
    );
    expect(stages).toEqual(expect.arrayContaining(["sandbox", "datascience"]));
    // With no target, a plain `docker build` gives the lean image: its stage is the last.
    expect(stages.at(-1)).toBe("sandbox");
    const config = gatewayConfig();
    const images = new Set(config.pools.map((pool) => pool.image));
    expect(images).toEqual(new Set([sandbox.image, dataScience.image]));
    expect(new Set(config.policy.allowedImages)).toEqual(images);
    expect(config.policy.defaultImage).toBe(sandbox.image);
    for (const entry of [sandbox, dataScience]) {
      // It only builds: the container exits at once, without a network.
      expect(commandOf(entry)).toEqual(["true"]);
      expect(entry.network_mode).toBe("none");
    }
  });

  it("runs `sandpool serve` and `sandpool migrate` from the gateway image", () => {
    for (const entry of [gateway, migrate]) {
      expect(entry.image).toBe("sandpool/gateway:dev");
      expect(buildOf(entry)).toEqual({ context: repoPath(), dockerfile: GATEWAY_DOCKERFILE });
    }
    expect(commandOf(gateway)).toEqual(["serve", "--config", CONFIG_PATH]);
    expect(commandOf(migrate)).toEqual(["migrate"]);
  });

  it("starts the gateway after migrations succeeded, with Postgres and Redis healthy", () => {
    expect(gateway.depends_on).toMatchObject({
      migrate: { condition: "service_completed_successfully" },
      postgres: { condition: "service_healthy" },
      redis: { condition: "service_healthy" },
      "sandbox-image": { condition: "service_completed_successfully" },
      "sandbox-datascience-image": { condition: "service_completed_successfully" },
      "socket-dir": { condition: "service_completed_successfully" },
    });
    expect(migrate.depends_on).toMatchObject({ postgres: { condition: "service_healthy" } });
    for (const name of ["postgres", "redis"]) {
      const healthcheck = service(name).healthcheck;
      expect(healthcheck?.disable, name).not.toBe(true);
      expect(healthcheck?.test, name).toBeTruthy();
    }
  });

  it("publishes ports on 127.0.0.1 only, and host-network services listen on loopback", () => {
    for (const [name, entry] of Object.entries(compose.services)) {
      for (const [hostIp, hostPort] of publishedPorts(entry))
        expect(`${name} ${hostIp}:${hostPort}`).toBe(`${name} 127.0.0.1:${hostPort}`);
    }
    const hostNetwork = Object.entries(compose.services)
      .filter(([, entry]) => entry.network_mode === "host")
      .map(([name]) => name);
    expect(hostNetwork.sort()).toEqual(["gateway", "grafana", "prometheus"]);
    expect(gatewayConfig().host).toBe("127.0.0.1");
    expect(commandOf(service("prometheus"))).toContain("--web.listen-address=127.0.0.1:9090");
    expect(environmentOf(service("grafana")).GF_SERVER_HTTP_ADDR).toBe("127.0.0.1");
    for (const name of hostNetwork) expect(service(name).ports, name).toBeUndefined();
  });

  it("shares the sandboxes' socket directory with the host's engine at the same path", () => {
    const socketDir = gatewayConfig().runtime.docker?.socketDir ?? DEFAULT_SOCKET_DIR;
    expect(mountedAt(gateway, socketDir)).toBe(socketDir);
    const made = service("socket-dir");
    expect(mountedAt(made, socketDir)).toBe(socketDir);
    expect(made.network_mode).toBe("none");
    // Owned by the gateway's user, which is not the sandboxes' (they could unseal their directory).
    expect(commandOf(made).join(" ")).toContain(`chown 10000:10000 ${socketDir}`);
    expect(readFileSync(GATEWAY_DOCKERFILE, "utf8")).toMatch(/^USER 10000:10000$/m);
    expect(gatewayConfig().runtime.docker?.user ?? "10001:10001").not.toMatch(/^10000:/);
  });

  it("mounts files that exist and volumes it declares", () => {
    for (const [name, entry] of Object.entries(compose.services)) {
      for (const mount of mountsOf(entry)) {
        if (mount.bind && mount.source.startsWith(repoPath()))
          expect(existsSync(mount.source), `${name}: ${mount.source}`).toBe(true);
        if (!mount.bind) expect(Object.keys(compose.volumes ?? {}), name).toContain(mount.source);
      }
    }
  });
});

describe("the gateway service's configuration", () => {
  it("is the file it mounts, and that file passes the gateway's own loading and validation", () => {
    expect(mountedAt(gateway, CONFIG_PATH)).toBe(repoPath("deploy/compose/sandpool.yaml"));
    const config = gatewayConfig();
    expect(config.runtime.kind).toBe("docker");
    expect(config.auth?.jwtSecret).toBe(composeEnv.SANDPOOL_JWT_SECRET);
  });

  it("refuses to start without a JWT secret of the operator's own (no published default)", () => {
    const { SANDPOOL_JWT_SECRET: _omitted, ...withoutSecret } = composeEnv;
    expect(() => interpolateAll(readYaml("docker-compose.yml"), withoutSecret)).toThrow(
      /SANDPOOL_JWT_SECRET must be set/,
    );
  });

  it("gives the docker runtime the engine whose socket it mounts", () => {
    const config = gatewayConfig();
    const options = dockerRuntimeOptionsSchema.parse({
      ...config.runtime.docker,
      deployment: config.deployment,
      execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
      maxFileBytes: config.policy.maxFileBytes,
    });
    expect(options.hosts).toHaveLength(1);
    const socket = options.hosts[0]!.replace(/^unix:\/\//, "");
    expect(mountsOf(gateway).some((m) => m.bind && m.target === socket)).toBe(true);
    // The socket belongs to the Docker group; the non-root gateway needs it.
    expect(gateway.group_add).toEqual(["999"]);
    // Its own label: a dev gateway on the same engine must not reap this stack's sandboxes.
    expect(config.deployment).not.toBe("sandpool");
  });

  it("reaches Postgres and Redis where compose publishes them, with Postgres's credentials", () => {
    const config = gatewayConfig();
    const postgres = service("postgres");
    const postgresEnv = environmentOf(postgres);
    const database = new URL(config.databaseUrl!);
    expect([database.hostname, Number(database.port)]).toEqual([
      "127.0.0.1",
      publishedPorts(postgres)[0]![1],
    ]);
    expect([database.username, database.password, database.pathname]).toEqual([
      postgresEnv.POSTGRES_USER,
      postgresEnv.POSTGRES_PASSWORD,
      `/${postgresEnv.POSTGRES_DB}`,
    ]);
    const redis = new URL(config.redisUrl!);
    expect([redis.hostname, Number(redis.port)]).toEqual([
      "127.0.0.1",
      publishedPorts(service("redis"))[0]![1],
    ]);

    // migrate is on the compose network: Postgres by its service name.
    const migrateUrl = new URL(environmentOf(migrate).DATABASE_URL!);
    expect([migrateUrl.hostname, migrateUrl.port, migrateUrl.password]).toEqual([
      "postgres",
      "5432",
      postgresEnv.POSTGRES_PASSWORD,
    ]);
  });

  it("gets longer to stop than its own shutdown grace", () => {
    expect(durationMs(gateway.stop_grace_period ?? "10s")).toBeGreaterThan(gatewayConfig().shutdownGraceMs);
  });
});

describe("the monitoring profile's wiring", () => {
  const prometheus = service("prometheus");
  const grafana = service("grafana");

  it("scrapes the gateway where it listens, with the rule file mounted where prometheus.yml loads it", () => {
    const config = gatewayConfig();
    const file = mountedAt(prometheus, "/etc/prometheus/prometheus.yml");
    const settings = readYaml<{
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    }>(path.relative(repoPath(), file));
    const job = settings.scrape_configs.find((c) => c.job_name === "sandpool")!;
    expect(job.static_configs.flatMap((c) => c.targets)).toEqual([`${config.host}:${config.port}`]);
    for (const rules of settings.rule_files)
      expect(mountedAt(prometheus, rules)).toBe(repoPath("helm/sandpool/files/sandpool-rules.yaml"));
  });

  it("sends the metrics token the gateway asks for: SANDPOOL_METRICS_TOKEN, written where prometheus.yml reads it", () => {
    const token = "a-compose-metrics-token-of-32-bytes-or-more";
    const withToken = interpolateAll(readYaml<ComposeFile>("docker-compose.yml"), {
      ...composeEnv,
      SANDPOOL_METRICS_TOKEN: token,
    });
    const gatewayWithToken = environmentOf(withToken.services.gateway!);
    expect(gatewayWithToken.SANDPOOL_METRICS_TOKEN).toBe(token);
    expect(
      loadGatewayConfig({ file: mountedAt(gateway, CONFIG_PATH), env: gatewayWithToken }).metrics.token,
    ).toBe(token);
    const scraper = withToken.services.prometheus!;
    expect(environmentOf(scraper).SANDPOOL_METRICS_TOKEN).toBe(token);
    const settings = readYaml<{
      scrape_configs: { job_name: string; authorization?: { type: string; credentials_file: string } }[];
    }>(path.relative(repoPath(), mountedAt(prometheus, "/etc/prometheus/prometheus.yml")));
    const { authorization } = settings.scrape_configs.find((c) => c.job_name === "sandpool")!;
    expect(authorization?.type).toBe("Bearer");
    // The entrypoint writes the variable to that file, then runs Prometheus with its command.
    const script = (scraper.entrypoint as string[]).join(" ");
    expect(script).toContain(`printf '%s' "$SANDPOOL_METRICS_TOKEN" > ${authorization!.credentials_file}`);
    expect(script).toMatch(/exec \/bin\/prometheus "\$@"/);
    // Unset by default: /metrics stays open on the loopback listener, the token file empty.
    expect(gatewayEnv.SANDPOOL_METRICS_TOKEN).toBe("");
    expect(gatewayConfig().metrics.token).toBeUndefined();
  });

  it("provisions Grafana with that Prometheus and the dashboard", () => {
    const provisioning = mountedAt(grafana, "/etc/grafana/provisioning");
    expect(provisioning).toBe(repoPath("deploy/grafana/provisioning"));
    const datasources = readYaml<{ datasources: { url: string }[] }>(
      "deploy/grafana/provisioning/datasources/prometheus.yaml",
    );
    const listen = commandOf(prometheus)
      .find((arg) => arg.startsWith("--web.listen-address="))!
      .split("=")[1];
    expect(datasources.datasources.map((d) => d.url)).toEqual([`http://${listen}`]);
    const providers = readYaml<{ providers: { options: { path: string } }[] }>(
      "deploy/grafana/provisioning/dashboards/sandpool.yaml",
    );
    const dashboardDir = providers.providers[0]!.options.path;
    expect(mountedAt(grafana, `${dashboardDir}/sandpool-dashboard.json`)).toBe(
      repoPath("helm/sandpool/files/sandpool-dashboard.json"),
    );
  });
});

describe("deploy/compose/multinode.yaml's nodes", () => {
  const multinode = interpolateAll(readYaml<ComposeFile>("deploy/compose/multinode.yaml"), {
    ...composeEnv,
    SANDPOOL_NODE_SECRETS: "a-compose-test-node-secret-of-32-bytes-or-more",
  });

  it("get Redis, the node secret and the metrics token, never the token key or DATABASE_URL", () => {
    const edge = environmentOf(multinode.services.edge!);
    expect(edge).toHaveProperty("SANDPOOL_JWT_SECRET");
    expect(edge).toHaveProperty("DATABASE_URL");
    for (const name of ["node-a", "node-b"]) {
      const env = environmentOf(multinode.services[name]!);
      expect(
        Object.keys(env).filter((key) => /JWT|JWKS|DATABASE|INTROSPECTION/.test(key)),
        name,
      ).toEqual([]);
      expect(env, name).toMatchObject({
        REDIS_URL: expect.stringMatching(/^redis:\/\//),
        SANDPOOL_NODE_SECRETS: edge.SANDPOOL_NODE_SECRETS,
        SANDPOOL_METRICS_TOKEN: edge.SANDPOOL_METRICS_TOKEN,
      });
    }
    // Both merge x-node (`<<: *node`): it waits for Redis, not Postgres.
    const shared = (multinode as ComposeFile & { "x-node": ComposeService })["x-node"];
    expect(Object.keys(shared.depends_on as Record<string, unknown>)).toEqual(
      expect.arrayContaining(["redis"]),
    );
    expect(Object.keys(shared.depends_on as Record<string, unknown>)).not.toContain("postgres");
  });
});
