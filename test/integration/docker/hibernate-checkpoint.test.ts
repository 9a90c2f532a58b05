/**
 * Hibernation on the real Docker engine (src/runtime/docker/docker-checkpoint.ts), on both
 * isolation levels. A gvisor sandbox is checkpointed whole and its container removed; a new
 * container restored from the checkpoint answers on its socket with the same session, whose
 * interpreter still holds its variables (and 50 MB it allocated) and whose files are there.
 * A plain container keeps its session's workspace: a fresh sandbox gets the files back, its
 * interpreter starts anew. The checkpoint is left in place, so a second restore works too, and
 * a container a crash left under the sandbox's name does not stop a memory restore.
 *
 * Needs a Docker engine with gVisor registered and the image: skipped with a warning locally,
 * fails under CI=true. The image's server must know `POST /sandbox/pause-listener`;
 * SANDPOOL_HIBERNATE_TEST_IMAGE names another image than sandpool/sandbox:dev to test with.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import { containerName } from "../../../src/runtime/docker/container-spec.js";
import { CHECKPOINT_NAME } from "../../../src/runtime/docker/docker-checkpoint.js";
import type { CheckpointKind } from "../../../src/runtime/sandbox-checkpoints.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../../support/contract-client.js";
import { type DockerSandbox, startDockerSandbox } from "../../support/docker-sandbox.js";
import { gvisorSuiteAvailable, SANDBOX_IMAGE } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = process.env.SANDPOOL_HIBERNATE_TEST_IMAGE ?? SANDBOX_IMAGE;
const available = await gvisorSuiteAvailable(IMAGE);

const cases: { isolation: Isolation; kind: CheckpointKind }[] = [
  { isolation: "gvisor", kind: "memory" },
  { isolation: "container", kind: "files" },
];

async function containerExists(id: string): Promise<boolean> {
  return new Dockerode()
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/**
 * The copies of a memory restore's checkpoint the engine's containerd client left in /tmp
 * (`ctrd-checkpoint*`): those holding the nonce written beside the checkpoint restored into
 * that container.
 */
async function engineCopiesOf(runtimeId: string): Promise<string[]> {
  const docker = new Dockerode();
  const root = (await docker.info()).DockerRootDir as string;
  const id = runtimeId.split(":")[1]!;
  const full = (await docker.getContainer(id).inspect()).Id;
  const nonce = await readFile(
    path.join(root, "containers", full, "checkpoints", CHECKPOINT_NAME, "sandpool-restore-nonce"),
  );
  const found: string[] = [];
  for (const name of await readdir("/tmp")) {
    if (!name.startsWith("ctrd-checkpoint")) continue;
    const held = await readFile(path.join("/tmp", name, "sandpool-restore-nonce")).catch(() => undefined);
    if (held?.equals(nonce)) found.push(name);
  }
  return found;
}

describe.skipIf(!available).each(cases)(
  "hibernating a $isolation sandbox keeps its $kind",
  ({ isolation, kind }) => {
    let box: DockerSandbox;
    let store: string;
    let pool: PoolSpec;
    let sessionId: string;
    let sandboxId: string;

    beforeAll(async () => {
      box = await startDockerSandbox(`hib-${isolation}`, IMAGE, isolation);
      store = await mkdtemp(path.join(os.tmpdir(), "sp-ckpt-"));
      sandboxId = (await new Dockerode().getContainer(box.sandbox.runtimeId.split(":")[1]!).inspect()).Config
        .Labels["sandpool.sandbox"]!;
      pool = {
        name: `hib-${isolation}`,
        image: IMAGE,
        resourceClass: "standard",
        minIdle: 0,
        maxTotal: 1,
        warmupConcurrency: 1,
        coldStartTimeoutMs: 30_000,
        isolation,
      };
      sessionId = await newSession(box.client);
    }, 60_000);

    afterAll(async () => {
      await box?.close();
      if (store) await rm(store, { recursive: true, force: true });
    });

    // gVisor only: a plain container's checkpoint never pauses the server.
    const itOnMemory = kind === "memory" ? it : () => undefined;
    itOnMemory(
      "a checkpoint the engine refuses early leaves the sandbox running and listening",
      async () => {
        const dir = path.join(store, "blocked");
        await mkdir(dir, { mode: 0o700 });
        // The engine cannot make its checkpoint directory where a file stands.
        await writeFile(path.join(dir, CHECKPOINT_NAME), "not a directory");
        await box.client.run(sessionId, "code_execution", { code: "before = 'still here'" });
        await expect(
          box.runtime.hibernation.checkpoint({
            runtimeId: box.sandbox.runtimeId,
            sandboxId,
            sandboxSessionId: sessionId,
            dir,
            isolation,
          }),
        ).rejects.toThrow();
        expect(await containerExists(box.sandbox.runtimeId.split(":")[1]!)).toBe(true);
        const answer = await box.client.run(sessionId, "code_execution", { code: "print(before)" });
        expect(answer.stdout).toBe("still here\n");
      },
      60_000,
    );

    it("saves, removes the container, and restores what it promises", async () => {
      const { hibernation } = box.runtime;
      expect(hibernation.checkpointKindOf(pool)).toBe(kind);
      const setup = await box.client.run(sessionId, "code_execution", {
        code: "counter = 41\nheld = bytearray(50 * 1024 * 1024)\nopen('notes.txt', 'w').write('kept')\nprint('ready')",
      });
      expect(setup.stdout).toBe("ready\n");

      const dir = path.join(store, "one");
      const saved = await hibernation.checkpoint({
        runtimeId: box.sandbox.runtimeId,
        sandboxId,
        sandboxSessionId: sessionId,
        dir,
        isolation,
      });
      expect(saved.kind).toBe(kind);
      expect(saved.bytes).toBeGreaterThan(0);
      // The container is the caller's to remove, once the checkpoint is kept.
      await box.runtime.destroy(box.sandbox.runtimeId);
      expect(await containerExists(box.sandbox.runtimeId.split(":")[1]!)).toBe(false);
      expect(((await stat(dir)).mode & 0o777).toString(8)).toBe("700");

      for (const attempt of [1, 2]) {
        // A container a crash left under the sandbox's name (a restore killed midway) is removed first.
        const stale =
          kind === "memory" && attempt === 1
            ? await new Dockerode().createContainer({
                name: containerName(box.runtime.options.deployment, sandboxId),
                Image: IMAGE,
              })
            : undefined;
        const restored = await hibernation.restore({
          sandboxId,
          pool,
          deadline: Date.now() + 60_000,
          kind,
          dir,
        });
        const client = new ContractClient(restored.endpoint);
        let session = sessionId;
        if (kind === "files") {
          session = await newSession(client);
          await hibernation.restoreFiles({
            runtimeId: restored.runtimeId,
            sandboxId,
            sandboxSessionId: session,
            dir,
          });
        }
        const after = await client.run(session, "code_execution", {
          code:
            kind === "memory"
              ? "counter += 1\nprint(counter, len(held), open('notes.txt').read())"
              : "print('counter' in globals(), open('notes.txt').read())",
        });
        expect(after.stdout, `attempt ${attempt}`).toBe(
          kind === "memory" ? `42 ${50 * 1024 * 1024} kept\n` : "False kept\n",
        );
        // The checkpoint stays for another restore until the store deletes it.
        expect((await readdir(dir)).length).toBeGreaterThan(0);
        if (kind === "memory") expect(await engineCopiesOf(restored.runtimeId)).toEqual([]);
        if (stale) expect(await containerExists(stale.id)).toBe(false);
        await box.runtime.destroy(restored.runtimeId);
      }
    }, 180_000);
  },
);
