/**
 * What egress sandboxes are told to trust comes from the gateway's egress: the deployment
 * CA's certificate when the proxy adds credentials, nothing when it does not (the docker
 * runtime then writes no trust files and sets no trust variables).
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { GatewayEgress } from "../../../src/egress/gateway-egress.js";
import { generateDeploymentCa } from "../../../src/egress/tls/deployment-ca.js";
import { LeafCertificates } from "../../../src/egress/tls/leaf-certificates.js";

const settings = { denyCidrs: [], maxTunnelsPerSandbox: 4, connectTimeoutMs: 1_000, idleTimeoutMs: 1_000 };
const log = pino({ level: "silent" });

describe("GatewayEgress's trust for sandboxes", () => {
  it("is the CA's certificate with an injection, never its key", async () => {
    const ca = await generateDeploymentCa("t");
    const egress = new GatewayEgress(settings, log, undefined, {
      injection: { leaves: new LeafCertificates(ca), upstreamCa: [] },
    });
    expect(egress.trustedCaPem()).toBe(ca.certPem);
    expect(egress.trustedCaPem()).not.toMatch(/PRIVATE KEY/);
  });

  it("is nothing without one", () => {
    expect(new GatewayEgress(settings, log).trustedCaPem()).toBeUndefined();
  });
});
