/**
 * docker-compose.yml as Compose itself reads it: `config -q` validates the file against the
 * schema of the Compose on this machine (v1 `docker-compose` or the v2 `docker compose`
 * plugin). Without either, the test skips with a loud line, or fails under CI=true (.ci/run
 * installs docker-compose). Compose v1 also insists that every build context exists, and the
 * sandbox image's context is the generated server bundle.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { requireService } from "../../support/require-service.js";
import {
  type ComposeFile,
  composeEnv,
  environmentOf,
  mountedAt,
  mountsOf,
  sandboxBundleDir,
} from "./compose-file.js";
import { repoPath } from "./deploy-files.js";
import { ROLE_ENV_VARIABLES } from "./roles-interface.js";

const run = promisify(execFile);

async function findCompose(): Promise<string[]> {
  for (const command of [["docker-compose"], ["docker", "compose"]]) {
    try {
      await run(command[0]!, [...command.slice(1), "version"], { timeout: 15_000 });
      return command;
    } catch {
      // not this one
    }
  }
  throw new Error("neither `docker-compose` nor `docker compose` is on PATH");
}

let compose: string[] = [];
const available =
  (await requireService(
    "docker-compose",
    async () => {
      compose = await findCompose();
      return true;
    },
    { start: "apt-get install docker-compose (as .ci/run does)" },
  )) &&
  (await requireService(
    "the sandbox bundle (the sandbox image's build context)",
    async () => {
      if (!existsSync(sandboxBundleDir()))
        throw new Error(`${path.relative(repoPath(), sandboxBundleDir())} does not exist`);
      return true;
    },
    { start: "npm run build:sandbox-bundle" },
  ));

/** Runs Compose with `args` from the repository, with `env` over the test's environment. */
async function runCompose(args: readonly string[], env: Record<string, string>) {
  return run(compose[0]!, [...compose.slice(1), ...args], {
    cwd: repoPath(),
    env: { ...process.env, ...env },
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => ({ code: 0, stdout, stderr: "" }),
    (error: { code?: number; stderr?: string; message: string }) => ({
      code: error.code ?? 1,
      stdout: "",
      stderr: error.stderr || error.message,
    }),
  );
}

describe("docker-compose.yml, as Compose reads it", () => {
  it.skipIf(!available)("passes `config -q`, the monitoring profile included", async () => {
    const args = ["-f", repoPath("docker-compose.yml"), "--profile", "monitoring", "config", "-q"];
    const result = await runCompose(args, composeEnv);
    expect(result, `${compose.join(" ")} ${args.join(" ")}`).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

/** `config` of docker-compose.yml with deploy/compose/multinode.yaml over it, as Compose merges them. */
const MULTINODE_ENV = {
  ...composeEnv,
  SANDPOOL_NODE_SECRETS: "a-compose-test-node-secret-of-32-bytes-or-more",
};

describe("deploy/compose/multinode.yaml (an edge and two nodes on one machine), as Compose merges it", () => {
  const files = ["-f", repoPath("docker-compose.yml"), "-f", repoPath("deploy/compose/multinode.yaml")];

  it.skipIf(!available)(
    "passes `config -q` over docker-compose.yml, the monitoring profile included",
    async () => {
      const result = await runCompose([...files, "--profile", "monitoring", "config", "-q"], MULTINODE_ENV);
      expect(result).toEqual({ code: 0, stdout: "", stderr: "" });
    },
  );

  it.skipIf(!available)(
    "runs one edge without an engine and two nodes apart, the single gateway off",
    async () => {
      const result = await runCompose([...files, "--profile", "monitoring", "config"], MULTINODE_ENV);
      expect(result.code, result.stderr).toBe(0);
      const merged = parse(result.stdout) as ComposeFile;
      const services = merged.services;
      expect(Object.keys(services)).toEqual(expect.arrayContaining(["edge", "node-a", "node-b", "gateway"]));
      // The `--role all` gateway only starts with a profile this example never enables.
      expect(services.gateway!.profiles).toEqual(["single-host"]);

      const edge = environmentOf(services.edge!);
      expect(edge.SANDPOOL_ROLE).toBe("edge");
      expect(edge).not.toHaveProperty("DOCKER_HOST");
      expect(mountsOf(services.edge!).map((mount) => mount.target)).toEqual(["/etc/sandpool/sandpool.yaml"]);

      const nodes = ["node-a", "node-b"].map((name) => ({ name, env: environmentOf(services[name]!) }));
      for (const { name, env } of nodes) {
        expect(env.SANDPOOL_ROLE, name).toBe("node");
        expect(env.SANDPOOL_NODE_ID, name).toBe(name);
        // Loopback only; advertised at the port it listens on.
        expect(env.SANDPOOL_NODE_HOST, name).toBe("127.0.0.1");
        expect(env.SANDPOOL_NODE_ADVERTISE_URL, name).toBe(`http://127.0.0.1:${env.SANDPOOL_NODE_PORT}`);
        expect(env.SANDPOOL_NODE_SECRETS, name).toBe(edge.SANDPOOL_NODE_SECRETS);
        expect(env.DOCKER_HOST, name).toBe("unix:///var/run/docker.sock");
        // Neither the token key nor Postgres: a node uses neither.
        expect(
          Object.keys(env).filter((key) => /JWT|JWKS|DATABASE/.test(key)),
          name,
        ).toEqual([]);
        expect(mountsOf(services[name]!).map((mount) => mount.target)).toEqual(
          expect.arrayContaining(["/var/run/docker.sock", "/run/sandpool"]),
        );
      }
      // One host network: no two processes on one port. One engine, one deployment: the edge
      // and the nodes share Redis's namespace, and each node keeps to its own sandboxes by its
      // id (the sandpool.owner label), so all three name the same deployment.
      const ports = [
        edge.SANDPOOL_PORT ?? "8080",
        ...nodes.flatMap(({ env }) => [env.SANDPOOL_PORT, env.SANDPOOL_NODE_PORT]),
      ];
      expect(new Set(ports).size).toBe(ports.length);
      const deployments = [edge, ...nodes.map(({ env }) => env)].map((env) => env.SANDPOOL_DEPLOYMENT);
      expect(new Set(deployments).size).toBe(1);
      expect(new Set(nodes.map(({ env }) => env.SANDPOOL_NODE_ID)).size).toBe(2);

      // Prometheus scrapes the edge and each node's port, as job sandpool.
      const prometheus = mountsOf(services.prometheus!).find(
        (mount) => mount.target === "/etc/prometheus/prometheus.yml",
      )!;
      const scrape = parse(readFileSync(prometheus.source, "utf8")) as {
        scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
      };
      expect(scrape.scrape_configs.map((config) => config.job_name)).toEqual(["sandpool"]);
      const targets = scrape.scrape_configs[0]!.static_configs.flatMap((config) => config.targets);
      expect(targets.sort()).toEqual(
        ["8080", ...nodes.map(({ env }) => env.SANDPOOL_NODE_PORT)].map((port) => `127.0.0.1:${port}`).sort(),
      );

      // Each one's configuration passes the gateway's loader (the roles' variables aside until
      // the gateway reads them: roles-interface.ts).
      const known = new Set(configEnvVariables.map((variable) => variable.name));
      for (const name of ["edge", "node-a", "node-b"]) {
        const env = environmentOf(services[name]!);
        for (const variable of ROLE_ENV_VARIABLES) if (!known.has(variable)) delete env[variable];
        const config = loadGatewayConfig({
          file: mountedAt(services[name]!, "/etc/sandpool/sandpool.yaml"),
          env,
        });
        expect(config.pools.length, name).toBeGreaterThan(0);
      }
    },
  );
});
