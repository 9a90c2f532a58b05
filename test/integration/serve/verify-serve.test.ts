/**
 * `sandpool verify` (the built CLI) against `sandpool serve` with docker sandboxes, on a
 * container pool and on a gVisor pool: every probe passes, with the admin token (so each
 * leak probe's next session is checked to run on the planting session's sandbox, and usage
 * figures are read). The JSON is the documented shape, and the run leaves no session open.
 * Needs `npm run build`, Postgres, Redis, Docker with the sandbox image and runsc.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { type Isolation, isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import { type CliServer, runCli } from "../../support/cli.js";
import { gvisorSuiteAvailable } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { putWorkspacePolicy } from "../../support/workspace-policy.js";

const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 10
    coldStartTimeoutMs: 60000
  - name: gv
    image: sandpool/sandbox:dev
    isolation: gvisor
    minIdle: 1
    maxTotal: 4
    coldStartTimeoutMs: 60000
runtime:
  docker:
    preloadModules: []
intervals:
  warmMs: 500
  reapMs: 500
`;

interface VerifyJson {
  probes: { name: string; outcome: "pass" | "fail"; evidence: string }[];
}

describe.skipIf(!available)("sandpool verify against serve", () => {
  let deployment: ServeDeployment;
  let replica: CliServer;
  let admin: string;
  const token = (workspace: string) =>
    mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace });

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    replica = await deployment.startReplica();
    admin = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, admin: true });
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  async function requireIsolation(workspace: string, isolation: Isolation) {
    if (isolation === "container") return;
    expect((await putWorkspacePolicy(replica.url, workspace, { isolation })).status).toBe(200);
  }

  describe.each(isolationLevels)("on %s isolation", (isolation) => {
    it("passes every probe, each leak probe's next session on the same sandbox", async () => {
      const [one, two] = [`verify-one-${isolation}`, `verify-two-${isolation}`];
      for (const workspace of [one, two]) await requireIsolation(workspace, isolation);
      const result = await runCli(
        [
          ...["verify", "--url", replica.url, "--token", await token(one)],
          ...["--other-token", await token(two), "--admin-token", admin, "--json"],
        ],
        { timeoutMs: 600_000 },
      );
      const report = JSON.parse(result.stdout) as VerifyJson;
      const failed = report.probes.filter((probe) => probe.outcome === "fail");
      expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
      expect(result.code).toBe(0);
      expect(report.probes.length).toBeGreaterThanOrEqual(20);
      for (const probe of report.probes) {
        expect(Object.keys(probe).sort()).toEqual(["evidence", "name", "outcome"]);
        expect(probe.evidence.length).toBeGreaterThan(0);
      }
      // Reuse was tested, not dodged: the probes' next sessions ran where the plants were.
      const leaks = report.probes.filter((probe) => probe.evidence.includes("the next session ran on"));
      expect(leaks.length).toBeGreaterThanOrEqual(15);
      const reused = leaks.filter((probe) => probe.evidence.includes("on the same sandbox"));
      expect(reused.length, JSON.stringify(leaks.map((p) => p.evidence))).toBeGreaterThanOrEqual(
        leaks.length - 2,
      );
      // Progress went to stderr, a line a step.
      expect(result.stderr).toMatch(/^verify: \[leak 1\/\d+\]/m);
      // Nothing of the run is left open.
      const sessions = await fetch(`${replica.url}/admin/v1/sessions`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      const items = ((await sessions.json()) as { items: { workspace: string }[] }).items;
      expect(items.filter((item) => item.workspace === one || item.workspace === two)).toEqual([]);
    }, 600_000);
  });
});
