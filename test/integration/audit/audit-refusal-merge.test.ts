/**
 * Refusal audit is bounded per workspace, on a real dev gateway: 300 `GET /sessions/<random
 * id>` from one token leave a row per second (per operation and code), not a row per id,
 * each counting its refusals and keeping a sample id and how many distinct ids were named.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import type { DeniedItem } from "../../../src/store/sql/audit-repository.js";
import { adminApi } from "../../support/admin-api.js";
import {
  startTestGateway,
  TEST_IMAGE,
  TEST_SECRET,
  type TestGateway,
} from "../../support/gateway-harness.js";
import { waitFor } from "../../support/wait-for.js";

const CALLS = 300;

describe("a flood of refusals naming random session ids", () => {
  let harness: TestGateway;
  let api: ReturnType<typeof adminApi>;
  beforeAll(async () => {
    harness = await startTestGateway({
      pools: [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 1 }],
    });
    api = adminApi(harness.url, await mintToken({ secret: TEST_SECRET, admin: true, subject: "ops" }));
  });
  afterAll(() => harness?.close());

  it("is merged per workspace, operation and code each second, whatever ids it names", async () => {
    const workspace = `flood-${randomUUID().slice(0, 8)}`;
    const client = await harness.client(workspace);
    const ids = Array.from({ length: CALLS }, () => randomUUID().replaceAll("-", ""));
    const started = Date.now();
    for (let i = 0; i < CALLS; i += 20) {
      const answers = await Promise.all(ids.slice(i, i + 20).map((id) => client.getSession(id)));
      for (const answer of answers) expect(answer.status).toBe(404);
    }
    const seconds = Math.floor(Date.now() / 1000) - Math.floor(started / 1000) + 1;

    let items: DeniedItem[] = [];
    await waitFor(
      async () => {
        const answer = await api("GET", `/audit?workspace=${workspace}&kind=denied&limit=1000`);
        expect(answer.status, answer.text).toBe(200);
        items = (answer.body as { items: DeniedItem[] }).items;
        return items.reduce((sum, item) => sum + item.count, 0) >= CALLS;
      },
      3_000,
      "every refusal counted in the audit",
    );
    expect(items.reduce((sum, item) => sum + item.count, 0)).toBe(CALLS);
    // One row per second the flood lasted (an audit read may close a second's row early: one more).
    expect(items.length).toBeLessThanOrEqual(seconds + 1);
    for (const item of items) {
      expect(item).toMatchObject({ operation: "sessions.get", code: "session.not_found", principals: 1 });
      expect(ids).toContain(item.sessionId);
      expect(item.sessions).toBe(Math.min(item.count, 100));
    }
  }, 60_000);
});
