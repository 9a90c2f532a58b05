/**
 * Issue 40, items 2 and 3, on the real engine and both isolation levels:
 *
 * - user code cannot reach its sandbox server's API: the socket is the gateway's (0600, made
 *   by the server as its directory's owner: src/sandbox/user-code/socket-owner.ts), so a
 *   connect from user code is refused, and a `POST /sandbox/recycle` through it never arrives;
 * - no moment of a sandbox's life makes its host directory writable by anyone but the gateway:
 *   a watcher stats every socket directory of the deployment every millisecond while the
 *   sandbox starts, serves, has a gVisor memory checkpoint refused early (the server listens
 *   again in the same directory), is saved, removed and restored (it listens again in a new
 *   container).
 *
 * The gateway here is the test process (root in CI): the owner of the directories.
 */

import { readdirSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import { CHECKPOINT_NAME } from "../../../src/runtime/docker/docker-checkpoint.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../../support/contract-client.js";
import { type DockerSandbox, startDockerSandbox } from "../../support/docker-sandbox.js";
import { gvisorSuiteAvailable, SANDBOX_IMAGE } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const available = await gvisorSuiteAvailable(SANDBOX_IMAGE);

/**
 * Every mode the socket directories of `root` took that a user other than their owner could
 * write (group or other write bit), with the moment it was seen; polled every millisecond.
 */
function watchModes(root: string) {
  const seen: string[] = [];
  let looks = 0;
  const look = () => {
    looks++;
    const dirs: string[] = [];
    try {
      for (const deployment of readdirSync(root)) {
        dirs.push(path.join(root, deployment));
        for (const sandbox of readdirSync(path.join(root, deployment)))
          dirs.push(path.join(root, deployment, sandbox));
      }
    } catch {
      // Made or removed meanwhile: the next look sees it.
    }
    for (const dir of dirs) {
      try {
        const mode = statSync(dir).mode & 0o777;
        if ((mode & 0o022) !== 0) seen.push(`${path.relative(root, dir)} ${mode.toString(8)}`);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  const timer = setInterval(look, 1);
  return {
    root,
    seen,
    looks: () => looks,
    stop: () => clearInterval(timer),
  };
}

/** User code connecting to its own server's socket, then sending it a recycle. */
const CONNECT = [
  "import socket",
  "s = socket.socket(socket.AF_UNIX)",
  "try:",
  "    s.connect('/run/sandpool/sandbox.sock')",
  "    s.sendall(b'POST /sandbox/recycle HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n{}')",
  "    print('connected', s.recv(100))",
  "except OSError as e:",
  "    print('refused', e.errno)",
].join("\n");

const levels: Isolation[] = ["container", "gvisor"];

describe.skipIf(!available).each(levels)("the socket directory of a %s sandbox", (isolation) => {
  let box: DockerSandbox;
  let watcher: ReturnType<typeof watchModes>;
  let store: string;
  let sandboxId: string;
  let sessionId: string;

  beforeAll(async () => {
    // The watcher looks under the system's temporary directory, where startDockerSandbox makes
    // its socket root (sp-*), from before the start on.
    const tmp = os.tmpdir();
    const before = new Set(readdirSync(tmp).filter((name) => name.startsWith("sp-")));
    const watchers: ReturnType<typeof watchModes>[] = [];
    const spotter = setInterval(() => {
      for (const name of readdirSync(tmp)) {
        if (name.startsWith("sp-") && !before.has(name)) {
          before.add(name);
          watchers.push(watchModes(path.join(tmp, name)));
        }
      }
    }, 1);
    box = await startDockerSandbox(`sockdir-${isolation}`, SANDBOX_IMAGE, isolation).finally(() =>
      clearInterval(spotter),
    );
    // <socketDir>/<deployment>/<sandbox id>/sandbox.sock
    const socketRoot = path.dirname(path.dirname(path.dirname(box.sandbox.endpoint.replace(/^unix:/, ""))));
    const mine = watchers.find((one) => one.root === socketRoot);
    for (const other of watchers) if (other !== mine) other.stop();
    if (!mine) throw new Error(`the socket root ${socketRoot} was not seen being made`);
    watcher = mine;
    store = await mkdtemp(path.join(os.tmpdir(), "sp-ckpt-"));
    sandboxId = (await new Dockerode().getContainer(box.sandbox.runtimeId.split(":")[1]!).inspect()).Config
      .Labels["sandpool.sandbox"]!;
    sessionId = await newSession(box.client);
  }, 90_000);

  afterAll(async () => {
    watcher?.stop();
    await box?.close();
    if (store) await rm(store, { recursive: true, force: true });
  });

  it("holds a socket only the gateway may connect to: user code is refused", async () => {
    const socket = box.sandbox.endpoint.replace(/^unix:/, "");
    const info = await stat(socket);
    expect(info.uid).toBe(process.getuid?.());
    expect((info.mode & 0o777).toString(8)).toBe("600");
    const tried = await box.client.run(sessionId, "code_execution", { code: CONNECT });
    // EACCES on runc, EPERM on gVisor.
    expect(tried.stdout).toMatch(/^refused (13|1)\n$/);
    // The session is still there: no recycle reached the server.
    expect((await box.client.run(sessionId, "code_execution", { code: "print(2)" })).stdout).toBe("2\n");
  }, 60_000);

  it("is never writable by anyone but the gateway, from the start through a refused save, a save and a restore", async () => {
    const pool: PoolSpec = {
      name: `sockdir-${isolation}`,
      image: SANDBOX_IMAGE,
      resourceClass: "standard",
      minIdle: 0,
      maxTotal: 1,
      warmupConcurrency: 1,
      coldStartTimeoutMs: 30_000,
      isolation,
    };
    const { hibernation } = box.runtime;
    const kind = hibernation.checkpointKindOf(pool);
    if (!kind) throw new Error(`no checkpoint for a ${isolation} pool`);
    if (kind === "memory") {
      // The engine cannot make its checkpoint where a file stands: the server listens again.
      const blocked = path.join(store, "blocked");
      await mkdir(blocked, { mode: 0o700 });
      await writeFile(path.join(blocked, CHECKPOINT_NAME), "not a directory");
      await expect(
        hibernation.checkpoint({
          runtimeId: box.sandbox.runtimeId,
          sandboxId,
          sandboxSessionId: sessionId,
          dir: blocked,
          isolation,
        }),
      ).rejects.toThrow();
      expect((await box.client.run(sessionId, "code_execution", { code: "print(3)" })).stdout).toBe("3\n");
    }
    const dir = path.join(store, "saved");
    await hibernation.checkpoint({
      runtimeId: box.sandbox.runtimeId,
      sandboxId,
      sandboxSessionId: sessionId,
      dir,
      isolation,
    });
    await box.runtime.destroy(box.sandbox.runtimeId);
    const restored = await hibernation.restore({ sandboxId, pool, deadline: Date.now() + 60_000, kind, dir });
    const client = new ContractClient(restored.endpoint);
    const session = kind === "memory" ? sessionId : await newSession(client);
    const tried = await client.run(session, "code_execution", { code: CONNECT });
    expect(tried.stdout).toMatch(/^refused (13|1)\n$/);
    await box.runtime.destroy(restored.runtimeId);

    expect(watcher.looks()).toBeGreaterThan(100);
    expect(watcher.seen).toEqual([]);
  }, 180_000);
});
