import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { validatePolicySet } from "../../../src/policy/policy-set.js";
import { policyFieldNames } from "../../../src/policy-schema/policy-fields.js";
import { deployment } from "./deployment.js";

const classes = ["standard"];

function problems(input: unknown): string[] {
  try {
    validatePolicySet(input, deployment(), classes);
  } catch (error) {
    expect(error).toBeInstanceOf(SandpoolError);
    expect((error as SandpoolError).code).toBe("request.malformed");
    return (error as SandpoolError).message.split("; ");
  }
  throw new Error(`expected ${JSON.stringify(input)} to be refused`);
}

describe("validatePolicySet", () => {
  it("fills every field an entry leaves out with no narrowing, and sorts by workspace", () => {
    const set = validatePolicySet(
      { policies: { "team-b": { maxConcurrentSessions: 2 }, "team-a": null } },
      deployment(),
      classes,
    );
    expect([...set.keys()]).toEqual(["team-a", "team-b"]);
    expect(set.get("team-a")).toMatchObject({
      enabled: true,
      maxConcurrentSessions: null,
      allowedTools: null,
    });
    expect(set.get("team-b")).toMatchObject({
      enabled: true,
      maxConcurrentSessions: 2,
      sessionsPerMinute: null,
    });
    expect(Object.keys(set.get("team-b")!).sort()).toEqual([...policyFieldNames].sort());
  });

  it("reads an empty or null set as no rows at all", () => {
    expect(validatePolicySet({ policies: {} }, deployment(), classes).size).toBe(0);
    expect(validatePolicySet({ policies: null }, deployment(), classes).size).toBe(0);
  });

  it("lists every problem of every entry, each prefixed with its workspace", () => {
    const listed = problems({
      policies: {
        ok: { maxConcurrentSessions: 1 },
        greedy: { maxConcurrentSessions: 10_000, sessionsPerMinute: 10_000 },
        "bad id": {},
        notAMap: [1],
        typo: { maxConcurentSessions: 1 },
      },
    });
    expect(listed.filter((p) => p.startsWith("greedy: "))).toHaveLength(2);
    expect(listed).toContain("notAMap: expected a map of fields (or nothing for no narrowing)");
    expect(listed.some((p) => p.startsWith("bad id: not a valid workspace id"))).toBe(true);
    expect(listed.some((p) => p.startsWith("typo: ") && p.includes("maxConcurentSessions"))).toBe(true);
    expect(listed.some((p) => p.startsWith("ok"))).toBe(false);
  });

  it("refuses a body that is not a set", () => {
    expect(problems({})).toEqual(["policies is missing (write `policies: {}` to remove every row)"]);
    expect(problems({ policies: [] })).toEqual(["policies must be a map of workspace id to fields"]);
    expect(problems({ policies: {}, extra: 1 })).toEqual([
      "unknown top-level key(s): extra (only 'policies')",
    ]);
    expect(problems([])).toHaveLength(1);
    expect(problems(null)).toHaveLength(1);
  });
});
