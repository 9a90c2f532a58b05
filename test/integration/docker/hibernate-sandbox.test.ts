/**
 * Hibernating a sandbox into the file-system checkpoint store and resuming it
 * (src/hibernate/hibernate-sandbox.ts) on the real Docker engine, both isolation levels:
 * the store meters the checkpoint and the container is gone; concurrent resumes make one
 * sandbox; a refusal before the save (the workspace's bound, the store's byte cap or its
 * disk's free floor) leaves the sandbox running untouched; a failed restore keeps the
 * checkpoint and a retry resumes.
 *
 * Needs a Docker engine with gVisor registered and the image: skipped with a warning locally,
 * fails under CI=true. The image's server must know `POST /sandbox/pause-listener`;
 * SANDPOOL_HIBERNATE_TEST_IMAGE names another image than sandpool/sandbox:dev to test with.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointBoundError } from "../../../src/hibernate/checkpoint-store.js";
import { FsCheckpointStore } from "../../../src/hibernate/fs-checkpoint-store.js";
import {
  type HibernatedSandbox,
  hibernateSandbox,
  type ResumedSandbox,
  resumeSandbox,
} from "../../../src/hibernate/hibernate-sandbox.js";
import { SingleFlight } from "../../../src/hibernate/single-flight.js";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../../support/contract-client.js";
import { type DockerSandbox, startDockerSandbox } from "../../support/docker-sandbox.js";
import { containerRunning, gvisorSuiteAvailable, SANDBOX_IMAGE } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = process.env.SANDPOOL_HIBERNATE_TEST_IMAGE ?? SANDBOX_IMAGE;
const available = await gvisorSuiteAvailable(IMAGE);
const WORKSPACE = "acme";

describe.skipIf(!available).each(["gvisor", "container"] as Isolation[])(
  "a %s sandbox hibernates into the store and resumes",
  (isolation) => {
    let box: DockerSandbox;
    let storeRoot: string;
    let store: FsCheckpointStore;
    let pool: PoolSpec;
    let sandboxId: string;
    let sandboxSessionId: string;
    const sessionId = `ses-${randomBytes(4).toString("hex")}`;
    let hibernated: HibernatedSandbox;

    beforeAll(async () => {
      box = await startDockerSandbox(`hibs-${isolation}`, IMAGE, isolation);
      storeRoot = await mkdtemp(path.join(os.tmpdir(), "sp-store-"));
      store = new FsCheckpointStore(path.join(storeRoot, "checkpoints"));
      sandboxId = (await new Dockerode().getContainer(box.sandbox.runtimeId.split(":")[1]!).inspect()).Config
        .Labels["sandpool.sandbox"]!;
      pool = {
        name: `hibs-${isolation}`,
        image: IMAGE,
        resourceClass: "standard",
        minIdle: 0,
        maxTotal: 4,
        warmupConcurrency: 1,
        coldStartTimeoutMs: 30_000,
        isolation,
      };
      sandboxSessionId = await newSession(box.client);
      await box.client.run(sandboxSessionId, "code_execution", {
        code: "counter = 7\nopen('notes.txt', 'w').write('kept')",
      });
    }, 60_000);

    afterAll(async () => {
      await box?.close();
      if (storeRoot) await rm(storeRoot, { recursive: true, force: true });
    });

    const input = () => ({
      hibernation: box.runtime.hibernation,
      store,
      workspace: WORKSPACE,
      sessionId,
      runtimeId: box.sandbox.runtimeId,
      sandboxId,
      sandboxSessionId,
      pool,
      destroy: (runtimeId: string) => box.runtime.destroy(runtimeId),
    });

    it("refuses at the workspace's bound before saving anything: the sandbox runs on as it was", async () => {
      await expect(hibernateSandbox({ ...input(), bounds: { maxCheckpoints: 0 } })).rejects.toBeInstanceOf(
        CheckpointBoundError,
      );
      expect(await store.usage(WORKSPACE)).toEqual({ checkpoints: 0, bytes: 0 });
      const answer = await box.client.run(sandboxSessionId, "code_execution", {
        code: "print(counter, open('notes.txt').read())",
      });
      expect(answer.stdout).toBe("7 kept\n");
    });

    it("refuses at the store's byte cap or under its disk's free floor before saving anything: the sandbox runs on as it was", async () => {
      const refused: string[] = [];
      const onRefused = (reason: string) => refused.push(reason);
      // Something already in the store (another workspace's checkpoint) fills its cap.
      const other = await store.begin("another-workspace", "ses-other", {});
      await writeFile(path.join(other, "checkpoint.img"), Buffer.alloc(4096, 1));
      await store.commit("another-workspace", "ses-other", other);
      const capped = new FsCheckpointStore(store.location, { limits: { maxBytes: 4096 }, onRefused });
      const floored = new FsCheckpointStore(store.location, {
        limits: { minFreeBytes: Number.MAX_SAFE_INTEGER },
        onRefused,
      });
      for (const full of [capped, floored]) {
        await expect(hibernateSandbox({ ...input(), store: full, bounds: {} })).rejects.toMatchObject({
          name: "CheckpointBoundError",
          message: expect.stringMatching(/hibernate\.(maxStoreBytes|minFreeBytes)/),
        });
      }
      expect(refused).toEqual(["store_bytes", "disk_free"]);
      expect(await store.usage(WORKSPACE)).toEqual({ checkpoints: 0, bytes: 0 });
      expect(await containerRunning(box.sandbox.runtimeId)).toBe(true);
      const answer = await box.client.run(sandboxSessionId, "code_execution", {
        code: "print(counter, open('notes.txt').read())",
      });
      expect(answer.stdout).toBe("7 kept\n");
      await store.delete("another-workspace", "ses-other");
    });

    it("hibernates: the checkpoint is metered in the store and the container is gone", async () => {
      hibernated = await hibernateSandbox({ ...input(), bounds: { maxCheckpoints: 1 } });
      expect(hibernated.kind).toBe(isolation === "gvisor" ? "memory" : "files");
      expect(hibernated.bytes).toBeGreaterThan(0);
      expect(await store.usage(WORKSPACE)).toEqual({ checkpoints: 1, bytes: hibernated.bytes });
      expect(await store.locate("another-workspace", sessionId)).toBeUndefined();
      expect(await containerRunning(box.sandbox.runtimeId)).toBe(false);
    }, 60_000);

    const resume = (deadline: number) =>
      resumeSandbox({
        hibernation: box.runtime.hibernation,
        store,
        workspace: WORKSPACE,
        sessionId,
        hibernated,
        pool,
        deadline,
        freshSandboxId: () => `sbx-${randomBytes(6).toString("hex")}`,
        openSession: (sandbox) => newSession(new ContractClient(sandbox.endpoint)),
        destroy: (runtimeId) => box.runtime.destroy(runtimeId),
      });

    it("a failed restore keeps the checkpoint; the retry resumes, once for concurrent callers", async () => {
      await expect(resume(Date.now() - 1)).rejects.toThrow(/deadline/);
      expect((await store.usage(WORKSPACE)).checkpoints).toBe(1);

      const flight = new SingleFlight<ResumedSandbox>();
      const resumed = await Promise.all(
        [1, 2, 3].map(() => flight.run(sessionId, () => resume(Date.now() + 60_000))),
      );
      expect(new Set(resumed.map((r) => r.runtimeId)).size).toBe(1);
      const [sandbox] = resumed;
      const client = new ContractClient(sandbox!.endpoint);
      const answer = await client.run(sandbox!.sandboxSessionId, "code_execution", {
        code: "print(globals().get('counter'), open('notes.txt').read())",
      });
      expect(answer.stdout).toBe(isolation === "gvisor" ? "7 kept\n" : "None kept\n");
      expect(sandbox!.interpreterRestarted).toBe(isolation !== "gvisor");
      // The caller deletes the checkpoint once its session runs again.
      await store.delete(WORKSPACE, sessionId);
      expect(await store.usage(WORKSPACE)).toEqual({ checkpoints: 0, bytes: 0 });
      await box.runtime.destroy(sandbox!.runtimeId);
    }, 120_000);
  },
);
