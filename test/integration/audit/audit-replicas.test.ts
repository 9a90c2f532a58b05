/**
 * Refusals audited across two `sandpool serve` replicas (Postgres, Redis, docker sandboxes):
 * a refusal on either replica (policy, quota, unknown session) is listed by the admin API of
 * both within two seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { adminApi } from "../../support/admin-api.js";
import type { CliServer } from "../../support/cli.js";
import { deniedListed } from "../../support/denied-audit.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";

const available = await serveStackAvailable();

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 4
    coldStartTimeoutMs: 60000
`;

describe.skipIf(!available)("audit of refusals across two serve replicas", () => {
  let deployment: ServeDeployment;
  let one: CliServer;
  let two: CliServer;
  let adminToken: string;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    [one, two] = await Promise.all([deployment.startReplica(), deployment.startReplica()]);
    adminToken = await mintToken({
      secret: SERVE_SECRET,
      audience: SERVE_AUDIENCE,
      admin: true,
      subject: "ops",
    });
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  it("lists every replica's refusals on both, within two seconds", async () => {
    const workspace = "audited";
    const viaOne = await deployment.client(one, workspace);
    const viaTwo = await deployment.client(two, workspace);

    expect((await viaOne.getSession("gone")).status).toBe(404);
    expect((await viaTwo.createSession({ image: "elsewhere/image:1" })).status).toBe(403);
    const put = await adminApi(one.url, adminToken)("PUT", `/workspaces/${workspace}/policy`, {
      body: { maxConcurrentSessions: 1 },
    });
    expect(put.status, put.text).toBe(200);
    const created = await viaTwo.createSession();
    expect(created.status, created.text).toBe(201);
    // The edit reaches replica one by announcement; until then it may still admit.
    await waitFor(async () => {
      const answer = await viaOne.createSession();
      if (answer.status === 201) await viaOne.destroy((answer.body as { session_id: string }).session_id);
      return answer.status === 429;
    }, 5_000);
    const refusedAt = Date.now();

    const expected = [
      ["sessions.create", "quota.concurrent_sessions"],
      ["sessions.create", "policy.image_not_allowed"],
      ["sessions.get", "session.not_found"],
    ];
    for (const replica of [one, two]) {
      const items = await deniedListed(
        replica.url,
        adminToken,
        workspace,
        expected.length,
        `the refusals on ${replica.url}`,
      );
      expect(Date.now() - refusedAt).toBeLessThan(2_500);
      expect(items.map((item) => [item.operation, item.code])).toEqual(expected);
    }
  });
});
