/**
 * A replica killed (SIGKILL) while it is cold-starting sandboxes for a burst of sessions:
 * what it was starting or handing out is reclaimed by the other replica's reconciliation
 * once its in-flight marks lapse (15 s), well inside the reconcile grace, instead of holding
 * the pool's places until the starts' deadline (a minute here) or, for a sandbox handed out
 * before its lease was recorded, an hour. Afterwards every place in the pool is a recorded
 * lease or an idle sandbox, every container of the deployment is one of those, and the
 * surviving replica can fill the pool to its cap.
 *
 * Two real `sandpool serve` processes (the built CLI), one Redis, Postgres and docker
 * sandboxes (test/support/serve-deployment.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = await serveStackAvailable();

const MAX_TOTAL = 16;
const COLD_START_MS = 60_000;
const ORPHAN_GRACE_MS = 70_000;
/** The in-flight mark (15 s), a reconcile tick (1 s), and room for a loaded machine. */
const RECLAIMED_WITHIN_MS = 30_000;
const WORKSPACES = 4;
const CLIENTS_PER_WORKSPACE = 4;

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 0
    maxTotal: ${MAX_TOTAL}
    coldStartTimeoutMs: ${COLD_START_MS}
    demand: false
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 1000
  orphanGraceMs: ${ORPHAN_GRACE_MS}
`;

describe.skipIf(!available)("a replica killed while it cold-starts sandboxes", () => {
  let deployment: ServeDeployment;
  let victim: CliServer;
  let survivor: CliServer;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    [victim, survivor] = await Promise.all([deployment.startReplica(), deployment.startReplica()]);
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  /** The pool as the store holds it: places, recorded leases, idle sandboxes, marks in flight. */
  async function ledger() {
    const store = await deployment.store();
    const now = Date.now();
    const [members, leases, idle, inFlight] = await Promise.all([
      store.listMembers("default", now),
      store.listLeases(),
      store.listIdle("default"),
      store.listInFlight("default"),
    ]);
    return {
      members,
      accounted: new Set([
        ...leases.map((lease) => lease.sandbox.sandboxId),
        ...idle.map((r) => r.sandboxId),
      ]),
      leases: leases.length,
      inFlight,
    };
  }

  it("frees the places it held and leaves none of its containers", async () => {
    // A burst of sessions on the victim: the pool is empty, so each one is a cold start.
    const clients: ContractClient[] = [];
    for (let w = 0; w < WORKSPACES; w++) {
      for (let c = 0; c < CLIENTS_PER_WORKSPACE; c++)
        clients.push(await deployment.client(victim, `burst-${w}`));
    }
    let killed = false;
    const burst = clients.map(async (client) => {
      while (!killed) {
        const created = await client.createSession().catch(() => undefined);
        if (!created || killed) return;
        if (created.status !== 201) continue;
        const id = (created.body as { session_id: string }).session_id;
        await client.run(id, "code_execution", { code: "print(1)" }).catch(() => undefined);
      }
    });

    // Killed with several starts under way: containers exist that no lease or idle list names yet.
    let startsAtKill = 0;
    await waitFor(
      async () => {
        const [containers, pool] = await Promise.all([deployment.containers(), ledger()]);
        startsAtKill = containers.filter((c) => !pool.accounted.has(c.sandboxId)).length;
        return startsAtKill >= 3;
      },
      COLD_START_MS,
      "three cold starts under way on the victim",
    );
    victim.process.kill("SIGKILL");
    killed = true;
    const killedAt = Date.now();
    await Promise.all(burst);

    // Within the in-flight mark and a reconcile tick (far inside the grace), only what is
    // accounted for holds a place, and only it has a container.
    let last = await ledger();
    let containers = await deployment.containers();
    await waitFor(
      async () => {
        [last, containers] = await Promise.all([ledger(), deployment.containers()]);
        return (
          last.members.every((id) => last.accounted.has(id)) &&
          containers.every((c) => last.accounted.has(c.sandboxId))
        );
      },
      RECLAIMED_WITHIN_MS,
      "the dead replica's starts reclaimed",
    ).catch((error: Error) => {
      const stray = last.members.filter((id) => !last.accounted.has(id));
      const orphans = containers.filter((c) => !last.accounted.has(c.sandboxId)).map((c) => c.sandboxId);
      throw new Error(
        `${error.message} (${startsAtKill} starts under way at the kill): ` +
          `${stray.length} places held by nothing, ${orphans.length} containers of nothing ` +
          `after ${Date.now() - killedAt} ms`,
      );
    });
    console.log(
      `kill -9 with ${startsAtKill} starts under way: reclaimed within ${Date.now() - killedAt} ms; ` +
        `${last.leases} recorded sessions live on`,
    );
    expect(last.inFlight.filter((mark) => mark.until <= Date.now())).toEqual([]);

    // The places are the pool's again: the survivor fills it to its cap.
    const client = await deployment.client(survivor, "after");
    const free = MAX_TOTAL - last.members.length;
    expect(free).toBeGreaterThan(0);
    const created = await Promise.all(
      Array.from({ length: free }, async (_, i) =>
        (await deployment.client(survivor, `after-${i % WORKSPACES}`)).createSession(),
      ),
    );
    expect(created.map((answer) => answer.status)).toEqual(created.map(() => 201));
    expect((await client.createSession()).status).toBe(503); // and no further
  }, 300_000);
});
