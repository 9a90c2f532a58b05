/** The `egress` section of the configuration and the deployment's egress allow-lists. */
import { describe, expect, it } from "vitest";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import type { EgressProxySettings } from "../../../src/egress/egress-proxy-options.js";

function config(extra: Partial<GatewayConfigInput> = {}, policy: Record<string, unknown> = {}) {
  return gatewayConfigSchema.safeParse({
    auth: { jwtSecret: "0123456789abcdef0123456789abcdef" },
    policy: { allowedImages: ["img/a"], defaultImage: "img/a", ...policy },
    pools: [{ name: "a", image: "img/a" }],
    ...extra,
  });
}

describe("egress configuration", () => {
  it("defaults to no extra deny ranges, any port, and bounded connections", () => {
    const parsed = config();
    expect(parsed.success).toBe(true);
    const settings: EgressProxySettings = parsed.data!.egress;
    expect(settings).toEqual({
      denyCidrs: [],
      allowPorts: [],
      maxTunnelsPerSandbox: 64,
      connectTimeoutMs: 10_000,
      idleTimeoutMs: 300_000,
      upstreamCaFiles: [],
    });
    expect(parsed.data!.policy).toMatchObject({ egressAllowCidrs: [], egressAllowHosts: [] });
  });

  it("takes the egress CA's two files together, never one alone", () => {
    const both = config({ egress: { caCertFile: "/ca/tls.crt", caKeyFile: "/ca/tls.key" } });
    expect(both.success).toBe(true);
    expect(both.data!.egress).toMatchObject({ caCertFile: "/ca/tls.crt", caKeyFile: "/ca/tls.key" });
    const alone = config({ egress: { caCertFile: "/ca/tls.crt" } });
    expect(alone.success).toBe(false);
    expect(JSON.stringify(alone.error)).toMatch(/go together/);
  });

  it("takes cluster ranges and ports", () => {
    const parsed = config({ egress: { denyCidrs: ["10.96.0.0/12", "fd10::/108"], allowPorts: [443] } });
    expect(parsed.data?.egress).toMatchObject({
      denyCidrs: ["10.96.0.0/12", "fd10::/108"],
      allowPorts: [443],
    });
  });

  it("refuses a malformed range, a port out of range and an unknown key", () => {
    const paths = (input: Partial<GatewayConfigInput>, policy = {}) =>
      config(input, policy).error?.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`) ?? [];
    expect(paths({ egress: { denyCidrs: ["10.96.0.0"] } })).toEqual([
      "egress.denyCidrs.0: '10.96.0.0' is not a CIDR range (for example 10.1.0.0/16 or 2001:db8::/32)",
    ]);
    expect(paths({ egress: { allowPorts: [0] } })[0]).toMatch(/^egress\.allowPorts\.0/);
    expect(paths({ egress: { denyCidr: [] } as never })[0]).toMatch(/denyCidr/);
    expect(paths({}, { egressAllowHosts: ["*"] })[0]).toMatch(
      /^policy\.egressAllowHosts\.0: '\*' is not a host name/,
    );
  });
});
