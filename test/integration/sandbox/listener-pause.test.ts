/**
 * The sandbox server on a Unix socket stops listening for a checkpoint
 * (`POST /sandbox/pause-listener`) and listens again on SIGUSR2, with its sessions as they
 * were; on TCP the route does not exist. (The checkpoint itself: test/integration/docker/
 * hibernate-checkpoint.test.ts.)
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { socketAccepts } from "../../../src/runtime/docker/docker-checkpoint.js";
import { ContractClient } from "../../support/contract-client.js";
import { newSession, startTestSandbox, type TestSandbox } from "../../support/sandbox-server.js";

async function waitFor(check: () => Promise<boolean>, ms = 3_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(20);
  }
  return false;
}

describe("the sandbox server's listener pause", () => {
  let box: TestSandbox;
  let socketPath: string;

  beforeAll(async () => {
    const probe = await startTestSandbox();
    socketPath = `${probe.root}.sock`;
    await probe.close();
    box = await startTestSandbox({ socket: socketPath });
  });
  afterAll(async () => {
    await box?.close();
  });

  it("stops listening after answering, and listens again on SIGUSR2 with its sessions kept", async () => {
    const client = new ContractClient(`unix:${socketPath}`);
    const id = await newSession(client);
    await client.run(id, "code_execution", { code: "kept = 'yes'" });

    const paused = await client.request("POST", "/sandbox/pause-listener");
    expect(paused.status).toBe(200);
    expect(paused.body).toEqual({ status: "paused" });
    expect(await waitFor(async () => !(await socketAccepts(socketPath)))).toBe(true);

    process.kill(process.pid, "SIGUSR2");
    expect(await waitFor(() => socketAccepts(socketPath))).toBe(true);
    const answer = await client.run(id, "code_execution", { code: "print(kept)" });
    expect(answer.stdout).toBe("yes\n");
  });

  it("has no such route on TCP", async () => {
    const tcp = await startTestSandbox();
    try {
      expect((await tcp.client.request("POST", "/sandbox/pause-listener")).status).toBe(404);
    } finally {
      await tcp.close();
    }
  });
});
