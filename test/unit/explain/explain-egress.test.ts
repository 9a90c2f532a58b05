import { describe, expect, it } from "vitest";
import { explain } from "../../../src/explain/explain.js";
import type { ExplainDeps } from "../../../src/explain/explain-deps.js";
import { parseExplainRequest } from "../../../src/explain/explain-request.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import type { SecretBinding } from "../../../src/secrets/workspace-secrets.js";
import type { Lease } from "../../../src/store/coordination/records.js";

const IMAGE = "sandpool/sandbox:dev";
const bearer: SecretBinding = {
  hosts: ["api.github.com"],
  presentation: { header: "Authorization", template: "Bearer {{secret}}" },
};

function deps(
  policy: { egressAllowed: boolean; egressAllowHosts: string[] },
  leases: Lease[] = [],
): ExplainDeps {
  const deployment = deploymentPolicySchema.parse({ allowedImages: [IMAGE], defaultImage: IMAGE, ...policy });
  return {
    policies: {
      forWorkspace: async (workspace: string) => effectivePolicy(workspace, deployment, undefined),
    },
    admission: {
      previewSession: async () => ({ checks: [] }),
      previewExec: async () => ({ checks: [] }),
    } as unknown as ExplainDeps["admission"],
    pools: {
      list: () => [{ name: "web", image: IMAGE, egress: true, resourceClass: "standard" }],
      capacity: async () => ({ outcome: "warm", members: 0, maxTotal: 2, detail: "" }),
    } as unknown as ExplainDeps["pools"],
    sessions: { find: async (id: string) => leases.find((lease) => lease.sessionId === id) },
    // These requests carry no token: the authenticator is never asked.
    authenticator: {
      authenticate: async () => {
        throw new Error("no token to check here");
      },
    },
    secretBindings: async () => [
      { name: "github", binding: bearer },
      {
        name: "pypi",
        binding: { hosts: ["upload.pypi.org"], presentation: { basicAuth: { username: "__token__" } } },
      },
    ],
    egressSettings: { allowPorts: [443] },
  };
}

const hosts = { egressAllowed: true, egressAllowHosts: ["api.github.com", "upload.pypi.org"] };

async function explained(body: Record<string, unknown>, services = deps(hosts)) {
  const answer = await explain(services, parseExplainRequest({ workspace: "team-a", ...body }));
  // Never a secret's value, whatever is asked.
  expect(JSON.stringify(answer)).not.toContain("{{secret}}");
  return answer;
}

const rules = (steps: Array<{ rule?: string; verdict: string }>) =>
  steps.map((s) => `${s.rule} ${s.verdict}`);

describe("explain for an egress destination", () => {
  it("allows a host the workspace allows, naming the secret that would be attached", async () => {
    const answer = await explained({ operation: "sessions.create", egressHost: "api.github.com" });
    expect(answer.decision).toBe("allow");
    expect(answer.egress).toMatchObject({
      destination: "api.github.com:443",
      decision: "allow",
      secrets: ["github"],
    });
  });

  it("refuses a host outside the workspace's list, by that rule, without changing the call's decision", async () => {
    const answer = await explained({ operation: "sessions.create", egressHost: "evil.example" });
    expect(answer.decision).toBe("allow");
    expect(answer.egress?.decision).toBe("deny");
    expect(rules(answer.egress!.steps)).toContain("egress.host deny");
    expect(answer.egress?.secrets).toEqual([]);
  });

  it("refuses by the session's narrowing, and attaches only the session's secrets", async () => {
    const args = { sandpool: { egress: { hosts: ["upload.pypi.org"] }, secrets: ["pypi"] } };
    const refused = await explained({ operation: "sessions.create", args, egressHost: "api.github.com" });
    expect(rules(refused.egress!.steps)).toEqual(
      expect.arrayContaining(["egress.host pass", "egress.session deny"]),
    );
    const allowed = await explained({ operation: "sessions.create", args, egressHost: "upload.pypi.org" });
    expect(allowed.egress).toMatchObject({ decision: "allow", secrets: ["pypi"] });
  });

  it("refuses a port the deployment does not allow", async () => {
    const answer = await explained({ operation: "sessions.create", egressHost: "api.github.com:8443" });
    expect(rules(answer.egress!.steps)).toContain("egress.port deny");
  });

  it("reads a session's own narrowing from its lease", async () => {
    const lease = {
      sessionId: "s1",
      workspace: "team-a",
      egress: { hosts: ["upload.pypi.org"], secrets: [] },
    } as unknown as Lease;
    const answer = await explained(
      { operation: "sessions.get", args: { session_id: "s1" }, egressHost: "upload.pypi.org" },
      deps(hosts, [lease]),
    );
    expect(answer.egress).toMatchObject({ decision: "allow", secrets: [] });
  });

  it("refuses a destination for a session whose pool has no egress (no proxy at all)", async () => {
    const lease = { sessionId: "s2", workspace: "team-a", pool: "plain" } as unknown as Lease;
    const services = deps(hosts, [lease]);
    services.pools = {
      list: () => [{ name: "plain", image: IMAGE, resourceClass: "standard" }],
      capacity: async () => ({ outcome: "warm", members: 0, maxTotal: 2, detail: "" }),
    } as unknown as ExplainDeps["pools"];
    const answer = await explained(
      {
        operation: "sessions.get",
        args: { session_id: "s2" },
        egressHost: "api.github.com",
      },
      services,
    );
    expect(rules(answer.egress!.steps)).toContain("egress.pool deny");
  });

  it("refuses everything for a workspace without egress", async () => {
    const answer = await explained(
      { operation: "sessions.create", egressHost: "api.github.com" },
      deps({ egressAllowed: false, egressAllowHosts: [] }),
    );
    expect(answer.egress?.decision).toBe("deny");
    expect(rules(answer.egress!.steps)).toContain("egress.allowed deny");
  });

  it("reports a widening session as the call's own 403", async () => {
    const answer = await explained({
      operation: "sessions.create",
      args: { sandpool: { egress: { hosts: ["evil.example"] } } },
    });
    expect(answer.code).toBe("policy.egress_not_allowed");
    const secret = await explained({
      operation: "sessions.create",
      args: { sandpool: { secrets: ["nope"] } },
    });
    expect(secret.code).toBe("policy.secret_not_allowed");
  });

  it("refuses a malformed destination", () => {
    for (const egressHost of ["*.github.com", "10.0.0.1", "a.example:99999", 42])
      expect(() =>
        parseExplainRequest({ workspace: "team-a", operation: "sessions.create", egressHost }),
      ).toThrow(/egressHost/);
  });
});
