import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { judgeNarrowing, leaseEgressOf, parseSessionEgress } from "../../../src/egress/session-egress.js";

const policy = { egressAllowed: true, egressAllowHosts: ["api.example.com", "*.pythonhosted.org"] };
const names = ["github", "pypi"];

function malformedProblems(body: unknown): readonly string[] {
  try {
    parseSessionEgress(body);
  } catch (error) {
    expect(error).toBeInstanceOf(SandpoolError);
    expect((error as SandpoolError).status).toBe(422);
    return (error as SandpoolError).problems ?? [];
  }
  throw new Error("not refused");
}

describe("a session's egress narrowing: its shape", () => {
  it("is absent when the body has no sandpool member", () => {
    expect(parseSessionEgress({ image: "x" })).toBeUndefined();
    expect(parseSessionEgress(undefined)).toBeUndefined();
  });

  it("names the path of every malformed part", () => {
    expect(malformedProblems({ sandpool: { egress: { hosts: ["ok.example", "10.0.0.1"] } } })[0]).toMatch(
      /^sandpool\.egress\.hosts\[1\]: .*address/,
    );
    expect(malformedProblems({ sandpool: { egress: { hosts: [] } } })[0]).toMatch(/^sandpool\.egress\.hosts/);
    expect(malformedProblems({ sandpool: { secrets: "github" } })[0]).toMatch(/^sandpool\.secrets/);
    expect(malformedProblems({ sandpool: { egres: {} } })[0]).toMatch(/egres/);
    expect(
      malformedProblems({ sandpool: { egress: { hosts: ["a.example"], cidrs: ["0.0.0.0/0"] } } })[0],
    ).toMatch(/cidrs/);
    expect(malformedProblems({ sandpool: "all" })[0]).toMatch(/^sandpool/);
    expect(malformedProblems({ sandpool: { egress: { hosts: Array(65).fill("a.example") } } })[0]).toMatch(
      /^sandpool\.egress\.hosts/,
    );
  });
});

describe("a session's egress narrowing: within its workspace", () => {
  const judge = (body: unknown, p = policy, n = names) => judgeNarrowing(parseSessionEgress(body), p, n);

  it("keeps a narrowing within the workspace's hosts and secrets", () => {
    expect(
      judge({
        sandpool: { egress: { hosts: ["API.example.com", "files.pythonhosted.org"] }, secrets: ["pypi"] },
      }),
    ).toEqual({
      allowed: true,
      egress: { hosts: ["api.example.com", "files.pythonhosted.org"], secrets: ["pypi"] },
    });
    expect(judge({ sandpool: { secrets: [] } })).toEqual({ allowed: true, egress: { secrets: [] } });
    expect(judge({})).toEqual({ allowed: true, egress: undefined });
  });

  it("refuses a host beyond the workspace's, naming the field", () => {
    const verdict = judge({ sandpool: { egress: { hosts: ["api.example.com", "evil.example"] } } });
    expect(verdict).toMatchObject({
      allowed: false,
      field: "sandpool.egress.hosts[1]",
      code: "policy.egress_not_allowed",
    });
    // A wider pattern than the workspace's exact host is a widening too.
    expect(judge({ sandpool: { egress: { hosts: ["*.example.com"] } } })).toMatchObject({
      allowed: false,
      field: "sandpool.egress.hosts[0]",
    });
    // The suffix trick: pythonhosted.org itself is not below *.pythonhosted.org.
    expect(judge({ sandpool: { egress: { hosts: ["pythonhosted.org"] } } })).toMatchObject({
      allowed: false,
    });
  });

  it("lets any valid pattern narrow a workspace that allows any host", () => {
    expect(
      judge(
        { sandpool: { egress: { hosts: ["*.anything.example"] } } },
        { egressAllowed: true, egressAllowHosts: [] },
      ),
    ).toMatchObject({
      allowed: true,
    });
  });

  it("refuses a secret the workspace does not hold (another workspace's name), naming the field", () => {
    const verdict = judge({ sandpool: { secrets: ["pypi", "other-teams-secret"] } });
    expect(verdict).toMatchObject({
      allowed: false,
      field: "sandpool.secrets[1]",
      code: "policy.secret_not_allowed",
    });
    if (!verdict.allowed) expect(verdict.message).not.toMatch(/github/);
  });

  it("refuses any narrowing on a workspace without egress", () => {
    const off = { egressAllowed: false, egressAllowHosts: [] };
    expect(judge({ sandpool: { egress: { hosts: ["a.example"] } } }, off)).toMatchObject({
      allowed: false,
      field: "sandpool.egress",
    });
    expect(judge({ sandpool: { secrets: ["github"] } }, off)).toMatchObject({
      allowed: false,
      field: "sandpool.secrets",
    });
  });
});

describe("a lease's narrowing read back", () => {
  it("reads a list Lua's cjson wrote as {} as empty, never as absent", () => {
    expect(leaseEgressOf({ egress: { secrets: {} } })).toEqual({ secrets: [] });
    expect(leaseEgressOf({ egress: { hosts: {} } })).toEqual({ hosts: [] });
    expect(leaseEgressOf({})).toBeUndefined();
  });
});
