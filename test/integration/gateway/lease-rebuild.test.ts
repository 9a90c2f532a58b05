/**
 * Redis may lose its state (a restart without persistence). Reconciliation then finds a
 * running sandbox nobody knows, reads the session it serves from the durable usage records,
 * and rebuilds its lease and slot: the client's session carries on, interpreter state and all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContractClient } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";
import { processExists } from "../../support/sandbox-server.js";
import { waitFor } from "../../support/wait-for.js";

let harness: TestGateway;
let client: ContractClient;
beforeAll(async () => {
  harness = await startTestGateway({ intervals: { reconcileMs: 3_600_000 } });
  client = await harness.client("team-rebuild");
});
afterAll(() => harness.close());

/** What a Redis restart does to one session: its lease, slot and pool place are gone. */
async function forget(sessionId: string): Promise<void> {
  const lease = await harness.store.takeLease({ workspace: "team-rebuild", sessionId });
  if (!lease) throw new Error("no lease to forget");
  await harness.store.releaseSlot("team-rebuild", sessionId);
  await harness.store.removeMember(lease.pool, lease.sandbox.sandboxId);
}

describe("after the coordination store lost a lease", () => {
  it("rebuilds it from the usage records, and the session carries on", async () => {
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    await client.run(id, "code_execution", { code: "kept = 'state'" });
    await harness.gateway.services.usage.flush();
    await forget(id);
    expect((await client.getSession(id)).status).toBe(404);

    const report = await harness.gateway.reconcile();
    expect(report.leasesRebuilt).toBe(1);
    expect(report.orphansDestroyed).toBe(0);
    expect((await client.getSession(id)).status).toBe(200);
    expect((await client.run(id, "code_execution", { code: "print(kept)" })).stdout).toBe("state\n");
    expect(await harness.store.countSlots("team-rebuild", Date.now())).toBe(1);
    expect((await client.destroy(id)).status).toBe(204);
    expect(await harness.store.countSlots("team-rebuild", Date.now())).toBe(0);
  });

  it("destroys a sandbox whose session had ended, instead of bringing it back", async () => {
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    const lease = await harness.store.getLease({ workspace: "team-rebuild", sessionId: id });
    await harness.gateway.services.usage.flush();
    await forget(id);
    // The end is recorded (as DestroySession would) but the sandbox was never destroyed.
    harness.gateway.services.usage.record({
      workspace: "team-rebuild",
      sessionId: id,
      kind: "session_ended",
      sandboxId: lease!.sandbox.sandboxId,
    });
    await harness.gateway.services.usage.flush();

    // As of later than the orphan grace: the sandbox is old enough to count as an orphan.
    const report = await harness.gateway.reconcile(Date.now() + 10 * 60_000);
    expect(report.leasesRebuilt).toBe(0);
    // At least this one (a warm-up in progress also looks like an orphan that late).
    expect(report.orphansDestroyed).toBeGreaterThanOrEqual(1);
    await waitFor(() => !processExists(Number(lease!.sandbox.runtimeId)), 5_000, "the sandbox to go");
    expect((await client.getSession(id)).status).toBe(404);
  });
});
