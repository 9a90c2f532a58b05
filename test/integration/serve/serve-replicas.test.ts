/**
 * `sandpool serve` as production runs it: Postgres, Redis, BullMQ and docker sandboxes,
 * two replicas sharing one pool and one view of every session.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyAdmin } from "../../../src/policy/policy-admin.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import { openPostgres } from "../../../src/store/sql/open-database.js";
import { PolicyRepository } from "../../../src/store/sql/policy-repository.js";
import type { CliServer } from "../../support/cli.js";
import { waitFor } from "../../support/sandbox-server.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { expectReachesNothing, expectWholeContract } from "../../support/session-checks.js";

const available = await serveStackAvailable();

const IMAGE = "sandpool/sandbox:dev";
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 8
    coldStartTimeoutMs: 60000
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 1000
  orphanGraceMs: 70000
`;

describe.skipIf(!available)("sandpool serve with two replicas", () => {
  let deployment: ServeDeployment;
  let one: CliServer;
  let two: CliServer;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    [one, two] = await Promise.all([deployment.startReplica(), deployment.startReplica()]);
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  it("serves the whole contract with docker sandboxes", async () => {
    await expectWholeContract(await deployment.client(one, "team-a"));
  });

  it("gives a session no way to the gateway, Redis, Postgres or the Docker API", async () => {
    await expectReachesNothing(await deployment.client(one, "team-a"), Number(new URL(one.url).port));
  });

  it("lets a session created through one replica be used and destroyed through the other", async () => {
    const viaOne = await deployment.client(one, "team-b");
    const viaTwo = await deployment.client(two, "team-b");
    const id = ((await viaOne.createSession()).body as { session_id: string }).session_id;
    await viaOne.run(id, "code_execution", { code: "shared = 'state'" });
    expect((await viaTwo.run(id, "code_execution", { code: "print(shared)" })).stdout).toBe("state\n");
    expect((await viaTwo.destroy(id)).status).toBe(204);
    expect((await viaOne.getSession(id)).status).toBe(404);
  });

  it("never exceeds a workspace's limit under concurrent creates on both replicas", async () => {
    // As an operator's edit: written, audited and announced to both replicas.
    const db = openPostgres(deployment.databaseUrl);
    const policy = deploymentPolicySchema.parse({ allowedImages: [IMAGE], defaultImage: IMAGE });
    const admin = new PolicyAdmin(policy, ["standard"], new PolicyRepository(db), await deployment.store());
    await admin.put("limited", { maxConcurrentSessions: 3 }, "test");
    await db.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const clients = [await deployment.client(one, "limited"), await deployment.client(two, "limited")];
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => clients[i % 2]!.createSession()));
    const created = answers.filter((answer) => answer.status === 201);
    expect(created).toHaveLength(3);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(9);
    for (const answer of created)
      await clients[0]!.destroy((answer.body as { session_id: string }).session_id);
  });

  it("after kill -9 of a replica holding leases, every container has a lease or waits idle, every slot a container", async () => {
    const victim = await deployment.startReplica();
    const viaVictim = await deployment.client(victim, "team-c");
    const ids: string[] = [];
    for (let i = 0; i < 2; i++)
      ids.push(((await viaVictim.createSession()).body as { session_id: string }).session_id);
    victim.process.kill("SIGKILL");

    const store = await deployment.store();
    const accounted = async () => {
      const leases = await store.listLeases();
      // Idle: fresh, or parked for the workspace whose session it served (sandbox reuse).
      const idle = [...(await store.listIdle("default")), ...(await store.listParked("default"))];
      const known = new Set([...leases.map((l) => l.sandbox.sandboxId), ...idle.map((r) => r.sandboxId)]);
      const containers = (await deployment.containers()).filter((c) => c.running);
      const slotsOk =
        (await store.countSlots("team-c", Date.now())) ===
        leases.filter((l) => l.workspace === "team-c").length;
      return slotsOk && containers.every((c) => known.has(c.sandboxId));
    };
    // Warm-ups the victim had in flight become orphans; reconciliation removes them after the grace.
    await waitFor(accounted, 120_000);

    // Its sessions live on: the surviving replicas serve them.
    const viaOne = await deployment.client(one, "team-c");
    for (const id of ids) {
      expect((await viaOne.run(id, "bash_code_execution", { command: "echo alive" })).stdout).toBe("alive\n");
      expect((await viaOne.destroy(id)).status).toBe(204);
    }
    await waitFor(async () => (await store.countSlots("team-c", Date.now())) === 0, 10_000);
  }, 200_000);

  it("drains gracefully on SIGTERM: a call in flight completes, then the replica exits 0", async () => {
    const leaving = await deployment.startReplica();
    const client = await deployment.client(leaving, "team-d");
    const id = ((await client.createSession()).body as { session_id: string }).session_id;
    const call = client.run(id, "code_execution", { code: "import time\ntime.sleep(2)\nprint('done')" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const exited = leaving.stop(30_000);
    expect((await call).stdout).toBe("done\n");
    expect(await exited).toBe(0);
    // The session was left to the other replicas.
    const viaTwo = await deployment.client(two, "team-d");
    expect((await viaTwo.getSession(id)).status).toBe(200);
    await viaTwo.destroy(id);
  }, 60_000);
});
