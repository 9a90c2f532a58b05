/**
 * Usage reports (GET /admin/v1/usage) and policy as code (GET/PUT /admin/v1/policies) on a
 * real dev gateway: the report of real sessions and calls, one workspace never seeing
 * another's usage, a set applied whole (diff, dry run, idempotent, refused whole with every
 * problem listed, audited, in force at once), and 401/403 for tokens that are not admin ones.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminRequestOptions, adminRequest } from "../../support/admin-api.js";
import {
  startTestGateway,
  TEST_IMAGE,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway({
    policy: {
      allowedImages: [TEST_IMAGE],
      defaultImage: TEST_IMAGE,
      maxConcurrentSessions: 5,
      sessionsPerMinute: 100,
    },
  });
  adminToken = await testAdminToken();
});
afterAll(() => harness?.close());

const fresh = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** The admin API of the test's gateway, with its admin token unless told otherwise. */
const api = (method: string, path: string, options?: AdminRequestOptions) =>
  adminRequest(harness.url, adminToken, method, path, options);

async function useSandbox(workspace: string, calls: number): Promise<void> {
  const client = await harness.client(workspace);
  const created = await client.createSession();
  expect(created.status, created.text).toBe(201);
  const id = (created.body as { session_id: string }).session_id;
  for (let i = 0; i < calls; i++) {
    const exec = await client.exec(id, { tool: "code_execution", input: { code: "print(1)" } });
    expect(exec.status, exec.text).toBe(200);
  }
  await client.destroy(id);
}

describe("GET /admin/v1/usage", () => {
  it("reports a workspace's sessions and calls per day and hour, by tool and image, and only its own", async () => {
    const [a, b] = [fresh("usage-a"), fresh("usage-b")];
    await useSandbox(a, 2);
    await useSandbox(b, 1);
    const answer = await api("GET", `/usage?workspace=${a}`);
    expect(answer.status, answer.text).toBe(200);
    const report = answer.body as {
      workspace: string;
      by: string;
      totals: Record<string, number>;
      buckets: { start: string; execCalls: number; byTool: unknown[]; byImage: unknown[] }[];
    };
    expect(report).toMatchObject({ workspace: a, by: "day" });
    expect(report.totals).toMatchObject({ sessions: 1, execCalls: 2 });
    expect(report.totals.sandboxSeconds).toBeGreaterThan(0);
    const today = report.buckets.find((bucket) => bucket.execCalls > 0)!;
    expect(today.byTool).toEqual([{ tool: "code_execution", execCalls: 2, execSeconds: expect.any(Number) }]);
    expect(today.byImage).toEqual([
      expect.objectContaining({ image: TEST_IMAGE, sessions: 1, execCalls: 2 }),
    ]);
    for (const key of ["sessions", "execCalls", "execSeconds", "sandboxSeconds", "cpuSeconds"])
      expect(today).toHaveProperty(key);

    const other = (await api("GET", `/usage?workspace=${b}`)).body as typeof report;
    expect(other.totals).toMatchObject({ sessions: 1, execCalls: 1 });
    const nobody = (await api("GET", `/usage?workspace=${fresh("idle")}`)).body as typeof report;
    expect(nobody.totals).toMatchObject({ sessions: 0, execCalls: 0 });

    const hourly = (
      await api(
        "GET",
        `/usage?workspace=${a}&by=hour&since=${new Date(Date.now() - 3 * 3_600_000).toISOString()}`,
      )
    ).body as typeof report;
    expect(hourly.by).toBe("hour");
    expect(hourly.buckets.length).toBeGreaterThanOrEqual(3);
    expect(hourly.buckets.reduce((sum, bucket) => sum + bucket.execCalls, 0)).toBe(2);
  });

  it("refuses a missing or bad workspace, bucket size, window or date (422)", async () => {
    for (const query of [
      "",
      "?workspace=",
      "?workspace=-bad",
      "?workspace=a&by=week",
      "?workspace=a&since=2026-01-02&until=2026-01-01",
      "?workspace=a&since=yesterday",
      "?workspace=a&by=hour&since=2020-01-01&until=2026-01-01",
      // A date-time without a zone would be read in the gateway's local time: refused.
      "?workspace=a&since=2026-01-01T10:00",
      "?workspace=a&until=2026-01-01T10:00:00",
      "?workspace=a&since=2026-02-30",
    ]) {
      const answer = await api("GET", `/usage${query}`);
      expect(answer.status, `${query}: ${answer.text}`).toBe(422);
      expect((answer.body as { detail: { code: string } }).detail.code).toBe("request.malformed");
    }
    const zoned = await api(
      "GET",
      `/usage?workspace=a&by=hour&since=${encodeURIComponent("2026-01-01T10:00+02:00")}&until=2026-01-02`,
    );
    expect(zoned.status, zoned.text).toBe(200);
    expect((zoned.body as { since: string }).since).toBe("2026-01-01T08:00:00.000Z");
  });
});

describe("GET and PUT /admin/v1/policies", () => {
  it("applies a set whole, answers the diff, changes nothing the second time, and audits each workspace", async () => {
    const [a, b] = [fresh("pac-a"), fresh("pac-b")];
    const set = { policies: { [a]: { maxConcurrentSessions: 2 }, [b]: { enabled: false } } };

    const dry = await api("PUT", "/policies?dryRun=true", { body: set });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, changed: true });
    expect((await api("GET", `/workspaces/${a}/policy`)).body).toMatchObject({ configured: false });

    const applied = await api("PUT", "/policies", { body: set });
    expect(applied.status, applied.text).toBe(200);
    const changes = (applied.body as { changes: { workspace: string; action: string }[] }).changes;
    expect(changes.map((change) => [change.workspace, change.action]).sort()).toEqual(
      [
        [a, "create"],
        [b, "create"],
      ].sort(),
    );
    expect((await api("GET", `/workspaces/${a}/policy`)).body).toMatchObject({
      row: { maxConcurrentSessions: 2, updatedBy: "ops" },
    });
    // In force at once: b's sessions are refused.
    const refused = await (await harness.client(b)).createSession();
    expect(refused.status).toBe(403);

    const again = await api("PUT", "/policies", { body: set });
    expect(again.body).toMatchObject({ dryRun: false, changed: false });
    expect(
      (again.body as { changes: { action: string }[] }).changes.every((c) => c.action === "unchanged"),
    ).toBe(true);
    const audit = (await api("GET", `/workspaces/${a}/audit`)).body as { entries: unknown[] };
    expect(audit.entries).toHaveLength(1);
    expect((await api("GET", "/policies")).body).toEqual({
      policies: { [a]: { maxConcurrentSessions: 2 }, [b]: { enabled: false } },
    });

    // An entry changed, another left out (its row goes), a third added.
    const c = fresh("pac-c");
    const next = await api("PUT", "/policies", {
      body: { policies: { [a]: { maxConcurrentSessions: 3 }, [c]: null } },
    });
    expect(next.status, next.text).toBe(200);
    const actions = Object.fromEntries(
      (next.body as { changes: { workspace: string; action: string }[] }).changes.map((x) => [
        x.workspace,
        x.action,
      ]),
    );
    expect(actions).toEqual({ [a]: "update", [b]: "delete", [c]: "create" });
    expect((await api("GET", `/workspaces/${b}/policy`)).body).toMatchObject({ configured: false });
    expect(
      ((await api("GET", `/workspaces/${a}/audit`)).body as { entries: unknown[] }).entries,
    ).toHaveLength(2);
  });

  it("refuses the whole set, listing every problem, when any entry is invalid", async () => {
    const before = (await api("GET", "/policies")).body;
    const answer = await api("PUT", "/policies", {
      body: {
        policies: {
          "good-one": { maxConcurrentSessions: 1 },
          "too-many": { maxConcurrentSessions: 99 },
          "bad-image": { allowedImages: ["evil/image"] },
          "-not-an-id": {},
          typo: { maxConcurentSessions: 1 },
        },
      },
    });
    expect(answer.status, answer.text).toBe(422);
    const problems = (answer.body as { detail: { problems: string[] } }).detail.problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^too-many: maxConcurrentSessions: 99 is above the deployment ceiling/),
        expect.stringMatching(/^bad-image: allowedImages: 'evil\/image' is not allowed/),
        expect.stringMatching(/^-not-an-id: not a valid workspace id/),
        expect.stringMatching(/^typo: /),
      ]),
    );
    expect(problems, problems.join("\n")).toHaveLength(4);
    expect((await api("GET", "/policies")).body).toEqual(before);
    expect((await api("PUT", "/policies", { body: { nope: 1 } })).status).toBe(422);
    expect((await api("PUT", "/policies?dryRun=maybe", { body: { policies: {} } })).status).toBe(422);
  });
});

describe("security", () => {
  it("refuses a workspace token (403) and no token (401) on every new admin route", async () => {
    const token = await harness.token("tenant-a");
    for (const [method, path] of [
      ["GET", "/usage?workspace=tenant-a"],
      ["GET", "/policies"],
      ["PUT", "/policies"],
      ["PUT", "/policies?dryRun=true"],
    ] as const) {
      const body = method === "PUT" ? { policies: {} } : undefined;
      const forbidden = await api(method, path, { token, body });
      expect(forbidden.status, `${method} ${path}`).toBe(403);
      expect((forbidden.body as { detail: { code: string } }).detail.code).toBe("auth.forbidden");
      expect((await api(method, path, { token: null, body })).status).toBe(401);
    }
  });
});
