/**
 * DockerRuntime.usage: what a sandbox really used, from its cgroup through Docker's stats
 * API, measured outside the sandbox. A sandbox kept busy reports CPU seconds; one that is
 * gone reports nothing. Through a gateway on the docker runtime, ending a session records
 * that usage (sandbox_cpu, sandbox_memory_peak where the engine has a peak) beside its
 * lifetime (session_ended).
 *
 * Needs a Docker engine and the image: skipped with a warning locally, fails under CI=true.
 * Everything it creates carries a per-file deployment label and is removed in afterAll.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { startDevGateway } from "../../../src/gateway/start-dev-gateway.js";
import { isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { PoolSpec, StartedSandbox } from "../../../src/runtime/sandbox-runtime.js";
import type { Database } from "../../../src/store/sql/database-types.js";
import { PgliteDialect } from "../../../src/store/sql/pglite-dialect.js";
import { ContractClient } from "../../support/contract-client.js";
import { gvisorSuiteAvailable, removeDeploymentContainers } from "../../support/docker-suite.js";
import { TEST_SECRET } from "../../support/gateway-harness.js";
import { newSession } from "../../support/sandbox-server.js";
import { waitFor } from "../../support/wait-for.js";
import { pgliteTemplate } from "../store/pglite-template.js";

const IMAGE = "sandpool/sandbox:dev";

const available = await gvisorSuiteAvailable(IMAGE);

const deployment = `test-usage-${randomBytes(4).toString("hex")}`;

const pool: PoolSpec = {
  name: "usage",
  image: IMAGE,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 2,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 30_000,
};

// On both isolation levels: a gVisor sandbox's cgroup holds its sentry too, so what it is
// charged (the budget's CPU, src/admission/cpu-meter.ts) includes gVisor's own work.
describe.skipIf(!available).each(isolationLevels)("DockerRuntime.usage (%s)", (isolation) => {
  let socketDir: string;
  let runtime: DockerRuntime;
  let sandbox: StartedSandbox;

  beforeAll(async () => {
    socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    runtime = new DockerRuntime({
      hosts: dockerHostsFromEnv(process.env),
      deployment,
      socketDir,
      execTimeoutCeilingSeconds: 60,
      maxFileBytes: 1024 * 1024,
    });
    sandbox = await runtime.start({
      sandboxId: `sbx-${randomBytes(6).toString("hex")}`,
      pool: { ...pool, isolation },
      deadline: Date.now() + 30_000,
    });
  }, 60_000);

  afterAll(async () => {
    await removeDeploymentContainers(deployment);
    await runtime?.close();
    if (socketDir) await rm(socketDir, { recursive: true, force: true });
  });

  it("reports the CPU seconds a busy sandbox used, and its memory", async () => {
    const before = await runtime.usage(sandbox.runtimeId);
    expect(before).toBeDefined();
    const client = new ContractClient(sandbox.endpoint);
    const session = await newSession(client);
    // About one second of CPU, then 64 MiB held at once and freed.
    const busy = await client.run(session, "code_execution", {
      code: "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass\nblock = bytearray(64 << 20)\ndel block\nprint('done')",
    });
    expect(busy.stdout).toBe("done\n");

    const after = await runtime.usage(sandbox.runtimeId);
    expect(after).toBeDefined();
    expect(after!.cpuSeconds).toBeGreaterThan(0);
    // The loop alone used a second of CPU, on top of whatever the start-up took.
    expect(after!.cpuSeconds - before!.cpuSeconds).toBeGreaterThanOrEqual(0.9);
    expect(after!.memoryBytes).toBeGreaterThan(0);
    // cgroup v1 reports a peak (max_usage), which saw the 64 MiB block; v2 reports none.
    if (after!.memoryPeakBytes !== undefined) {
      expect(after!.memoryPeakBytes).toBeGreaterThanOrEqual(64 << 20);
    }
  });

  it("starts its memory peak anew on request where the cgroup allows (v1 here): the next reading's peak is of what ran since", async () => {
    const held = await runtime.usage(sandbox.runtimeId);
    const reset = await runtime.resetMemoryPeak(sandbox.runtimeId);
    const after = await runtime.usage(sandbox.runtimeId);
    if (held?.memoryPeakBytes === undefined) {
      // cgroup v2 (or a cgroup not visible from here): no reset every reader sees.
      expect(reset).toBe(false);
      return;
    }
    expect(reset).toBe(true);
    // The earlier call's 64 MiB block is gone from the peak: it is what the sandbox holds now.
    expect(held.memoryPeakBytes).toBeGreaterThanOrEqual(64 << 20);
    expect(after!.memoryPeakBytes!).toBeLessThan(held.memoryPeakBytes);
    expect(after!.memoryPeakBytes!).toBeLessThanOrEqual(after!.memoryBytes! + (4 << 20));
    expect(await runtime.resetMemoryPeak("not-a-runtime-id")).toBe(false);
  });

  it("reports nothing for a sandbox that is gone, or an id it does not know", async () => {
    await runtime.destroy(sandbox.runtimeId);
    expect(await runtime.usage(sandbox.runtimeId)).toBeUndefined();
    expect(await runtime.usage("not-a-runtime-id")).toBeUndefined();
  });
});

describe.skipIf(!available)("session end through a gateway on the docker runtime", () => {
  it("records the sandbox's CPU time and memory from its cgroup, beside the session's lifetime", async () => {
    const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
    const config = gatewayConfigSchema.parse({
      host: "127.0.0.1",
      port: 0,
      auth: { jwtSecret: TEST_SECRET },
      policy: { allowedImages: [IMAGE], defaultImage: IMAGE },
      pools: [{ name: "usage", image: IMAGE, minIdle: 0, maxTotal: 1 }],
    });
    const runtime = new DockerRuntime(
      {
        hosts: dockerHostsFromEnv(process.env),
        deployment,
        socketDir,
        execTimeoutCeilingSeconds: 60,
        maxFileBytes: 1024 * 1024,
      },
      log,
    );
    const db = new Kysely<Database>({
      dialect: new PgliteDialect(await PGlite.create({ loadDataDir: await pgliteTemplate() })),
    });
    const { gateway, close } = await startDevGateway(config, { db, runtime }, log);
    try {
      const workspace = `usage-${randomBytes(4).toString("hex")}`;
      const client = new ContractClient(gateway.url, await mintToken({ secret: TEST_SECRET, workspace }));
      const created = await client.createSession();
      expect(created.status, created.text).toBe(201);
      const id = (created.body as { session_id: string }).session_id;
      const busy = await client.run(id, "code_execution", {
        code: "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass\nprint('done')",
      });
      expect(busy.stdout).toBe("done\n");
      expect((await client.destroy(id)).status).toBe(204);

      // The sandbox's usage is read after the answer (DeleteSession waits for no container).
      const readRows = async () => {
        await gateway.services.usage.flush();
        return db
          .selectFrom("usage_events")
          .select(["kind", "quantity", "sandbox_id", "detail"])
          .where("workspace_id", "=", workspace)
          .where("session_id", "=", id)
          .execute();
      };
      let rows = await readRows();
      await waitFor(async () => {
        rows = await readRows();
        return rows.some((row) => row.kind === "sandbox_cpu");
      }, 10_000);
      const byKind = new Map(rows.map((row) => [row.kind, row]));
      const cpu = byKind.get("sandbox_cpu");
      expect(cpu, JSON.stringify(rows)).toBeDefined();
      expect(Number(cpu!.quantity)).toBeGreaterThanOrEqual(900);
      expect(cpu!.sandbox_id).toBe(byKind.get("session_ended")?.sandbox_id);
      expect(Number(byKind.get("session_ended")!.quantity)).toBeGreaterThan(1_000);
      const peak = byKind.get("sandbox_memory_peak");
      if (peak) expect(Number(peak.quantity)).toBeGreaterThan(1024 * 1024);
    } finally {
      await close();
      await rm(socketDir, { recursive: true, force: true });
    }
  }, 90_000);

  it("records a reused sandbox's next session from its own baseline: none of the earlier session's CPU or memory peak", async () => {
    const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
    const config = gatewayConfigSchema.parse({
      host: "127.0.0.1",
      port: 0,
      auth: { jwtSecret: TEST_SECRET },
      policy: { allowedImages: [IMAGE], defaultImage: IMAGE, sandboxReuse: true },
      // One sandbox: the second session can only be served by the first one's, scrubbed.
      pools: [{ name: "usage", image: IMAGE, minIdle: 0, maxTotal: 1 }],
    });
    const runtime = new DockerRuntime(
      {
        hosts: dockerHostsFromEnv(process.env),
        deployment,
        socketDir,
        execTimeoutCeilingSeconds: 60,
        maxFileBytes: 1024 * 1024,
      },
      log,
    );
    const db = new Kysely<Database>({
      dialect: new PgliteDialect(await PGlite.create({ loadDataDir: await pgliteTemplate() })),
    });
    const { gateway, close } = await startDevGateway(config, { db, runtime }, log);
    try {
      const workspace = `reuse-${randomBytes(4).toString("hex")}`;
      const client = new ContractClient(gateway.url, await mintToken({ secret: TEST_SECRET, workspace }));
      const rowsOf = async (sessionId: string) => {
        await gateway.services.usage.flush();
        const rows = await db
          .selectFrom("usage_events")
          .select(["kind", "quantity", "sandbox_id"])
          .where("workspace_id", "=", workspace)
          .where("session_id", "=", sessionId)
          .execute();
        return new Map(rows.map((row) => [row.kind, row]));
      };
      const settled = async (sessionId: string) => {
        let rows = await rowsOf(sessionId);
        await waitFor(async () => {
          rows = await rowsOf(sessionId);
          return rows.has("sandbox_cpu") || rows.has("session_ended");
        }, 15_000);
        return rows;
      };

      const first = await client.createSession();
      expect(first.status, first.text).toBe(201);
      const firstId = (first.body as { session_id: string }).session_id;
      // A second of CPU and 160 MiB held at once.
      const busy = await client.run(firstId, "code_execution", {
        code: "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass\nblock = bytearray(160 << 20)\nfor i in range(0, len(block), 4096): block[i] = 1\ndel block\nprint('done')",
      });
      expect(busy.stdout).toBe("done\n");
      expect((await client.destroy(firstId)).status).toBe(204);
      const firstRows = await settled(firstId);

      // Its sandbox is scrubbed and parked; the workspace's next session takes it.
      let secondId = "";
      await waitFor(async () => {
        const second = await client.createSession();
        if (second.status !== 201) return false;
        secondId = (second.body as { session_id: string }).session_id;
        return true;
      }, 15_000);
      const quiet = await client.run(secondId, "code_execution", { code: "print('quiet')" });
      expect(quiet.stdout).toBe("quiet\n");
      expect((await client.destroy(secondId)).status).toBe(204);
      let secondRows = await settled(secondId);
      await waitFor(async () => {
        secondRows = await rowsOf(secondId);
        return secondRows.has("sandbox_cpu");
      }, 15_000);

      const sandboxOf = (rows: Map<string, { sandbox_id: string | null }>) =>
        rows.get("session_ended")?.sandbox_id;
      expect(sandboxOf(secondRows), "the second session ran in the first one's sandbox").toBe(
        sandboxOf(firstRows),
      );
      expect(Number(firstRows.get("sandbox_cpu")!.quantity)).toBeGreaterThanOrEqual(900);
      expect(Number(secondRows.get("sandbox_cpu")!.quantity)).toBeLessThan(600);
      const firstPeak = firstRows.get("sandbox_memory_peak");
      const secondPeak = secondRows.get("sandbox_memory_peak");
      if (firstPeak) {
        // cgroup v1 (this host): the kernel started the peak anew at the park.
        expect(Number(firstPeak.quantity)).toBeGreaterThanOrEqual(160 << 20);
        expect(secondPeak, "the second session has a peak of its own").toBeDefined();
        expect(Number(secondPeak!.quantity)).toBeLessThan(120 << 20);
      } else {
        expect(secondPeak).toBeUndefined();
      }
    } finally {
      await close();
      await rm(socketDir, { recursive: true, force: true });
    }
  }, 120_000);
});
