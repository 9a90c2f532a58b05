/**
 * The admin operations as declared: every one is served by a handler of src/admin (explain's
 * is src/explain's), declares a schema for each path parameter, and every schema it declares
 * becomes JSON Schema (the OpenAPI document is generated from them). Then the parameter
 * schemas' own sentences, which the admin API answers with as they are.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AdminDeps, adminHandlers } from "../../../src/admin/admin-handlers.js";
import { workspacePathParams } from "../../../src/operations/admin-schemas/admin-params.js";
import { auditQuerySchema } from "../../../src/operations/admin-schemas/audit-schemas.js";
import { policyAuditQuerySchema } from "../../../src/operations/admin-schemas/policy-schemas.js";
import { applyQuerySchema } from "../../../src/operations/admin-schemas/policy-set-schemas.js";
import {
  usageReportQuerySchema,
  usageSummaryQuerySchema,
} from "../../../src/operations/admin-schemas/usage-schemas.js";
import { operations } from "../../../src/operations/registry.js";

const admin = operations.all("admin");

/** What a schema refuses `value` with, as the admin API words it: one sentence per problem. */
function refusal(schema: z.ZodType, value: unknown): string[] {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
}

describe("admin operations", () => {
  it("are each served by one handler, keyed by operation id", () => {
    // Handlers read their dependencies when called, never when built.
    const handlers = adminHandlers({} as AdminDeps);
    const ids = admin.map((operation) => operation.id);
    expect(Object.keys(handlers).sort()).toEqual(ids.sort());
  });

  it("declare a schema for every path parameter, and a body only where a method takes one", () => {
    for (const operation of admin) {
      const names = [...operation.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
      if (names.length === 0) {
        expect(operation.params, operation.id).toBeUndefined();
        continue;
      }
      const params = Object.fromEntries(names.map((name) => [name, "tenant-a"]));
      expect(z.safeParse(operation.params!, params).success, operation.id).toBe(true);
      expect(z.safeParse(operation.params!, {}).success, operation.id).toBe(false);
    }
    for (const operation of admin.filter((operation) => operation.body))
      expect(["POST", "PUT", "PATCH"], operation.id).toContain(operation.method);
  });

  it("declare shapes that become JSON Schema, requests as read and answers as written", () => {
    for (const operation of admin) {
      for (const request of [operation.params, operation.query, operation.body])
        if (request) expect(() => z.toJSONSchema(request, { io: "input" }), operation.id).not.toThrow();
      if (operation.result) expect(() => z.toJSONSchema(operation.result!), operation.id).not.toThrow();
      else expect(["admin.policy.delete", "admin.secrets.delete"], operation.id).toContain(operation.id);
    }
  });
});

describe("admin parameters", () => {
  it("refuse a malformed workspace id in the path with a sentence saying what one is", () => {
    expect(refusal(workspacePathParams, { ws: "-bad" })).toEqual([
      "not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
    ]);
    expect(refusal(workspacePathParams, { ws: "a".repeat(129) })).toHaveLength(1);
    expect(refusal(workspacePathParams, { ws: "team-a.prod:1" })).toEqual([]);
  });

  it("read an empty value as none, and name the parameter in every refusal", () => {
    expect(refusal(policyAuditQuerySchema, { limit: "" })).toEqual([]);
    expect(refusal(policyAuditQuerySchema, { limit: "0" })).toEqual([
      "limit must be a whole number from 1 to 1000",
    ]);
    expect(refusal(policyAuditQuerySchema, { limit: "1e3" })).toHaveLength(1);
    expect(refusal(auditQuerySchema, { kind: "" })).toEqual([]);
    expect(refusal(auditQuerySchema, { kind: "all" })).toEqual(["kind must be denied or admin, got 'all'"]);
  });

  it("list every problem of a query at once", () => {
    expect(refusal(auditQuerySchema, { workspace: "no good", since: "yesterday", limit: "5000" })).toEqual([
      "workspace is not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
      "since: expected a date (YYYY-MM-DD, UTC) or a date-time with Z or an offset, got 'yesterday'",
      "limit must be a whole number from 1 to 1000",
    ]);
  });

  it("take instants with their zone, between 1970 and 9999", () => {
    expect(refusal(usageSummaryQuerySchema, { from: "2026-01-01", to: "2026-01-02T10:00:00+01:00" })).toEqual(
      [],
    );
    expect(refusal(usageSummaryQuerySchema, { to: "2026-01-02T10:00:00" })).toEqual([
      "to: '2026-01-02T10:00:00' has no time zone: add Z (UTC) or an offset such as +01:00",
    ]);
    expect(refusal(usageSummaryQuerySchema, { from: "1969-12-31" })).toEqual([
      "from must lie between 1970 and 9999, got '1969-12-31'",
    ]);
  });

  it("require the report's workspace, and refuse an empty bucket size or dry-run flag", () => {
    const required = "workspace is required (?workspace=<id>): a report covers one workspace";
    expect(refusal(usageReportQuerySchema, {})).toEqual([required]);
    expect(refusal(usageReportQuerySchema, { workspace: "" })).toEqual([required]);
    expect(refusal(usageReportQuerySchema, { workspace: "a", by: "" })).toEqual([
      "by must be hour or day, got ''",
    ]);
    expect(refusal(usageReportQuerySchema, { workspace: "a", by: "hour" })).toEqual([]);
    expect(refusal(applyQuerySchema, { dryRun: "maybe" })).toEqual(["dryRun must be true or false"]);
    expect(refusal(applyQuerySchema, {})).toEqual([]);
  });
});
