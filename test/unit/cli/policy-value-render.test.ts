/** One rendering of a policy value: `policy get` and `explain` say the same words for the same workspace. */
import { describe, expect, it } from "vitest";
import { renderExplain } from "../../../src/cli/commands/explain-render.js";
import { renderPolicy, type ShownPolicy } from "../../../src/cli/commands/policy-render.js";

/** The value cell of `field` in a rendered table (the column after the field's name). */
function cellOf(text: string, field: string): string | undefined {
  const line = text.split("\n").find((row) => row.startsWith(`${field} `));
  return line
    ?.slice(field.length)
    .trim()
    .split(/\s{2,}/)[0];
}

const effective = { egressAllowed: true, egressAllowHosts: [], egressAllowCidrs: [], maxFileBytes: 1024 };

describe("policy values in policy get and explain", () => {
  it("show an empty egress host list as (any host) in both, and an empty CIDR list as (none)", () => {
    const view: ShownPolicy = {
      workspace: "team-a",
      configured: false,
      row: null,
      effective,
      sources: {},
    };
    const policy = renderPolicy(view);
    const explained = renderExplain({
      workspace: "team-a",
      operation: "sessions.create",
      decision: "allow",
      code: null,
      steps: [{ step: "policy", verdict: "pass", rule: "egress", field: "egressAllowHosts", value: [] }],
      effective,
    });
    expect(cellOf(policy, "egressAllowHosts")).toBe("(any host)");
    expect(cellOf(explained, "egressAllowHosts")).toBe("(any host)");
    expect(explained).toMatch(/^policy\s+pass\s+egress\s+egressAllowHosts\s+\(any host\)\s+-$/m);
    expect(cellOf(policy, "egressAllowCidrs")).toBe("(none)");
    expect(cellOf(explained, "egressAllowCidrs")).toBe("(none)");
  });

  it("show a host list as its hosts in both", () => {
    const hosts = { ...effective, egressAllowHosts: ["pypi.org", "*.example.com"] };
    const policy = renderPolicy({
      workspace: "w",
      configured: true,
      row: null,
      effective: hosts,
      sources: {},
    });
    const explained = renderExplain({
      workspace: "w",
      operation: "sessions.create",
      decision: "allow",
      code: null,
      steps: [],
      effective: hosts,
    });
    expect(cellOf(policy, "egressAllowHosts")).toBe("pypi.org,*.example.com");
    expect(cellOf(explained, "egressAllowHosts")).toBe("pypi.org,*.example.com");
  });
});
