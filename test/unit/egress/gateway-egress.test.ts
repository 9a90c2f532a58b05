import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { GatewayEgress } from "../../../src/egress/gateway-egress.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";
import type { Lease } from "../../../src/store/coordination/records.js";

const settings = { denyCidrs: [], maxTunnelsPerSandbox: 4, connectTimeoutMs: 1_000, idleTimeoutMs: 1_000 };

function egressWith(leases: () => Lease[]) {
  let reads = 0;
  const egress = new GatewayEgress(settings, pino({ level: "silent" }));
  egress.bind({
    leases: async () => {
      reads++;
      return leases();
    },
    policyFor: async () =>
      ({
        enabled: true,
        egressAllowed: true,
        egressAllowCidrs: [],
        egressAllowHosts: [],
      }) as unknown as EffectivePolicy,
  });
  return { egress, reads: () => reads };
}

describe("GatewayEgress's owner lookup", () => {
  it("reads the leases once for a burst of connections, and remembers a miss briefly", async () => {
    const { egress, reads } = egressWith(() => []);
    const grants = await Promise.all(Array.from({ length: 10 }, () => egress.grantFor("sbx")));
    expect(grants.every((grant) => grant === undefined)).toBe(true);
    expect(reads()).toBe(1);
    expect(await egress.grantFor("sbx")).toBeUndefined();
    expect(reads()).toBe(1);
  });

  it("grants what the holder's policy allows", async () => {
    const lease = { workspace: "team-a", sandbox: { sandboxId: "sbx" } } as unknown as Lease;
    const { egress } = egressWith(() => [lease]);
    expect(await egress.grantFor("sbx")).toEqual({ allowCidrs: [], allowHosts: [] });
  });
});
