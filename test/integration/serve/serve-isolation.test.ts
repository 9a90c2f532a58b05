/**
 * `sandpool serve` with a container pool and a gvisor pool of the same image: its start-up
 * probes both isolation levels; a workspace that requires gVisor (its policy's isolation) gets
 * only the gvisor pool, one that does not gets the container pool; and on each level the same
 * checks hold: the whole contract, files in and out, and a session that reaches nothing. An
 * image only container pools serve answers such a workspace 403 policy.isolation_required.
 *
 * Needs Postgres, Redis, a Docker engine with gVisor registered (scripts/start-docker.sh) and
 * the sandbox images: skipped with a warning locally, fails under CI=true.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyAdmin } from "../../../src/policy/policy-admin.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import { type Isolation, isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import { openPostgres } from "../../../src/store/sql/open-database.js";
import { PolicyRepository } from "../../../src/store/sql/policy-repository.js";
import type { CliServer } from "../../support/cli.js";
import { gvisorSuiteAvailable } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { expectReachesNothing, expectWholeContract, kernelOfSession } from "../../support/session-checks.js";

const IMAGE = "sandpool/sandbox:dev";
const DATASCIENCE = "sandpool/sandbox-datascience:dev";
const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable(DATASCIENCE));

const CONFIG = `
policy:
  allowedImages: [${IMAGE}, ${DATASCIENCE}]
  defaultImage: ${IMAGE}
pools:
  - name: plain
    image: ${IMAGE}
    minIdle: 1
    maxTotal: 4
  - name: gv
    image: ${IMAGE}
    isolation: gvisor
    minIdle: 1
    maxTotal: 4
  - name: ds
    image: ${DATASCIENCE}
    minIdle: 0
    maxTotal: 1
runtime:
  docker:
    preloadModules: []
`;

/** The workspace of each level: gVisor required by its policy, or nothing required. */
const WORKSPACE: Record<Isolation, string> = { container: "team-plain", gvisor: "team-gvisor" };
const KERNEL: Record<Isolation, "host" | "gvisor"> = { container: "host", gvisor: "gvisor" };

describe.skipIf(!available)("sandpool serve with a container pool and a gvisor pool", () => {
  let deployment: ServeDeployment;
  let replica: CliServer;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    replica = await deployment.startReplica();
    // As an operator's edit: written, audited and announced to the replica.
    const db = openPostgres(deployment.databaseUrl);
    const policy = deploymentPolicySchema.parse({ allowedImages: [IMAGE, DATASCIENCE], defaultImage: IMAGE });
    const admin = new PolicyAdmin(policy, ["standard"], new PolicyRepository(db), await deployment.store());
    await admin.put(WORKSPACE.gvisor, { isolation: "gvisor" }, "test");
    await db.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  describe.each(isolationLevels)("a workspace whose sessions need %s isolation", (isolation) => {
    it(`runs on the ${KERNEL[isolation]} kernel`, async () => {
      expect(await kernelOfSession(await deployment.client(replica, WORKSPACE[isolation]))).toBe(
        KERNEL[isolation],
      );
    });

    it("is served the whole contract, files included", async () => {
      await expectWholeContract(await deployment.client(replica, WORKSPACE[isolation]));
    });

    it("reaches nothing: not the gateway, Redis, Postgres, the Docker API or the host", async () => {
      await expectReachesNothing(
        await deployment.client(replica, WORKSPACE[isolation]),
        Number(new URL(replica.url).port),
      );
    });
  });

  it("answers 403 policy.isolation_required for an image no gvisor pool serves", async () => {
    const client = await deployment.client(replica, WORKSPACE.gvisor);
    const refused = await client.createSession({ image: DATASCIENCE });
    expect(refused.status).toBe(403);
    expect((refused.body as { detail: { code: string } }).detail.code).toBe("policy.isolation_required");
  });
});
