import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type EgressPolicy, GatewayEgress, UNBOUND_HOST } from "../../../src/egress/gateway-egress.js";
import type { OpenedSecret } from "../../../src/secrets/workspace-secrets.js";
import type { Lease, LeaseKey } from "../../../src/store/coordination/records.js";

const settings = { denyCidrs: [], maxTunnelsPerSandbox: 4, connectTimeoutMs: 1_000, idleTimeoutMs: 1_000 };
const open: EgressPolicy = { enabled: true, egressAllowed: true, egressAllowCidrs: [], egressAllowHosts: [] };

const leaseOf = (sessionId: string, sandboxId: string, egress?: Lease["egress"]) =>
  ({
    workspace: "team-a",
    sessionId,
    sandbox: { sandboxId },
    ...(egress ? { egress } : {}),
  }) as unknown as Lease;

const github: OpenedSecret = {
  name: "github",
  binding: {
    hosts: ["api.github.com"],
    presentation: { header: "Authorization", template: "Bearer {{secret}}" },
  },
  value: "ghp_1",
};
const pypi: OpenedSecret = {
  name: "pypi",
  binding: { hosts: ["upload.pypi.org"], presentation: { basicAuth: { username: "__token__" } } },
  value: "pypi-2",
};

function egressWith(initial: Lease[], policy: EgressPolicy = open, secrets: OpenedSecret[] = []) {
  const counts = { scans: 0, keyed: 0 };
  let leases = initial;
  const egress = new GatewayEgress(settings, pino({ level: "silent" }));
  const used: string[] = [];
  const refused: string[] = [];
  egress.bind(
    {
      leases: async () => {
        counts.scans++;
        return leases;
      },
      lease: async (key: LeaseKey) => {
        counts.keyed++;
        return leases.find((l) => l.workspace === key.workspace && l.sessionId === key.sessionId);
      },
      policyFor: async () => policy,
      secretsOf: async () => secrets,
    },
    {
      credentialUsed: (holder, secret, host) => used.push(`${holder.sessionId} ${secret} ${host}`),
      refused: (holder, host, reason) => refused.push(`${holder.sessionId} ${host} ${reason}`),
    },
  );
  return { egress, counts, used, refused, setLeases: (next: Lease[]) => (leases = next) };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "gw-egress-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("GatewayEgress's holder lookup", () => {
  it("reads the leases once for a burst of connections, and remembers a miss briefly", async () => {
    const { egress, counts } = egressWith([]);
    const grants = await Promise.all(Array.from({ length: 10 }, () => egress.grantFor("sbx")));
    expect(grants.every((grant) => grant === undefined)).toBe(true);
    expect(counts.scans).toBe(1);
    expect(await egress.grantFor("sbx")).toBeUndefined();
    expect(counts.scans).toBe(1);
  });

  it("grants what the holder's policy allows", async () => {
    const { egress } = egressWith([leaseOf("s1", "sbx")]);
    expect(await egress.grantFor("sbx")).toEqual({ allowCidrs: [], allowHosts: [] });
  });

  it("costs one keyed read per connection once the holder is known, never a scan", async () => {
    const { egress, counts } = egressWith([leaseOf("s1", "sbx")]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      for (let i = 0; i < 5; i++) await egress.grantFor("sbx");
      expect(counts.scans).toBe(1);
      expect(counts.keyed).toBe(4);
    } finally {
      await egress.close("sbx");
    }
  });

  it("never carries a session's grant to the next session on the same (reused) sandbox", async () => {
    const narrowed = leaseOf("s1", "sbx", { hosts: ["api.github.com"], secrets: ["github"] });
    const { egress, setLeases } = egressWith([narrowed], open, [github, pypi]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      const first = await egress.grantFor("sbx");
      expect(first?.allowHosts).toEqual(["api.github.com"]);
      expect(first?.credentials?.map((c) => c.secret)).toEqual(["github"]);
      // s1 ends; the sandbox, scrubbed, serves s2 of the same workspace, not narrowed.
      setLeases([leaseOf("s2", "sbx")]);
      const second = await egress.grantFor("sbx");
      expect(second?.allowHosts).toEqual([]);
      expect(second?.credentials?.map((c) => c.secret)).toEqual(["github", "pypi"]);
      // s2 ends; s3 narrows to no secrets at all.
      setLeases([leaseOf("s3", "sbx", { secrets: [] })]);
      expect((await egress.grantFor("sbx"))?.credentials).toBeUndefined();
    } finally {
      await egress.close("sbx");
    }
  });

  it("gives a reused sandbox's next session its own grant, not what a scan begun before it read", async () => {
    const narrowed = leaseOf("s1", "sbx", { secrets: ["github"] });
    let current: Lease[] = [narrowed];
    let release = () => {};
    const egress = new GatewayEgress(settings, pino({ level: "silent" }));
    egress.bind(
      {
        // A slow store: the scan reads the leases as they were when it began.
        leases: async () => {
          const snapshot = current;
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return snapshot;
        },
        lease: async (key: LeaseKey) => current.find((l) => l.sessionId === key.sessionId),
        policyFor: async () => open,
        secretsOf: async () => [github, pypi],
      },
      {},
    );
    const first = egress.grantFor("sbx");
    // s1 ends and s2, asking for no secret, takes the sandbox while the scan is under way.
    current = [leaseOf("s2", "sbx", { secrets: [] })];
    const second = egress.grantFor("sbx");
    release();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    expect((await second)?.credentials).toBeUndefined();
    await first;
  });

  it("refuses everything once the holder is gone and no lease holds the sandbox", async () => {
    const { egress, setLeases } = egressWith([leaseOf("s1", "sbx")]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      expect(await egress.grantFor("sbx")).toBeDefined();
      setLeases([]);
      expect(await egress.grantFor("sbx")).toBeUndefined();
    } finally {
      await egress.close("sbx");
    }
  });

  it("does not take a lease that moved its session to another sandbox", async () => {
    const { egress, setLeases } = egressWith([leaseOf("s1", "sbx")]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      expect(await egress.grantFor("sbx")).toBeDefined();
      setLeases([leaseOf("s1", "other")]);
      expect(await egress.grantFor("sbx")).toBeUndefined();
    } finally {
      await egress.close("sbx");
    }
  });
});

describe("GatewayEgress's proxy events", () => {
  it("labels a secret's use with the binding's pattern, and anything else as unbound", async () => {
    const { egress, used } = egressWith([leaseOf("s1", "sbx")], open, [github]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      await egress.grantFor("sbx");
      const options = (egress.proxy as unknown as { options: { onCredentialUsed: (...a: string[]) => void } })
        .options;
      options.onCredentialUsed("sbx", "github", "api.github.com");
      options.onCredentialUsed("sbx", "github", "attacker-chosen.example");
      options.onCredentialUsed("unknown-sandbox", "github", "api.github.com");
      expect(used).toEqual(["s1 github api.github.com", `s1 github ${UNBOUND_HOST}`]);
    } finally {
      await egress.close("sbx");
    }
  });

  it("audits policy refusals of a leased sandbox only", async () => {
    const { egress, refused } = egressWith([leaseOf("s1", "sbx")]);
    await egress.open("sbx", path.join(dir, "p.sock"));
    try {
      await egress.grantFor("sbx");
      const options = (
        egress.proxy as unknown as {
          options: { onRefused: (s: string, h: string, r: string, n: number) => void };
        }
      ).options;
      options.onRefused("sbx", "evil.example", "not allowed", 403);
      options.onRefused("sbx", "slow.example", "cannot connect", 502);
      options.onRefused("nobody", "x.example", "no grant", 403);
      expect(refused).toEqual(["s1 evil.example not allowed"]);
    } finally {
      await egress.close("sbx");
    }
  });
});
