import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../../src/config/gateway-config.js";

const SECRET = "0123456789abcdef0123456789abcdef";

function base(overrides: Partial<GatewayConfigInput> = {}): GatewayConfigInput {
  return {
    auth: { jwtSecret: SECRET },
    policy: { allowedImages: ["img/a", "img/b"], defaultImage: "img/a" },
    pools: [
      { name: "a", image: "img/a" },
      { name: "b", image: "img/b" },
    ],
    ...overrides,
  };
}

function issues(input: unknown): z.core.$ZodIssue[] {
  const result = gatewayConfigSchema.safeParse(input);
  expect(result.success, "expected the configuration to be refused").toBe(false);
  return result.error!.issues;
}

const messages = (input: unknown) => issues(input).map((issue) => issue.message);

describe("gatewayConfigSchema", () => {
  it("accepts a minimal configuration and fills in the defaults", () => {
    const config = gatewayConfigSchema.parse(base());
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      basePath: "",
      deployment: "sandpool",
      limits: { maxJsonBodyBytes: 10 * 1024 * 1024, execDeadlineBufferMs: 10_000 },
      intervals: { warmMs: 1_000, reapMs: 1_000, reconcileMs: 30_000 },
      authFailures: { maxFailures: 20, windowMs: 60_000 },
      policyCacheTtlMs: 1_000,
    });
    expect(config.pools[0]).toEqual({
      name: "a",
      image: "img/a",
      resourceClass: "standard",
      minIdle: 2,
      maxTotal: 100,
      warmupConcurrency: 2,
      demand: true,
      isolation: "container",
      coldStartTimeoutMs: 30_000,
      startQueueTimeoutMs: 120_000,
      egress: false,
    });
    expect(config.policy.resourceClass).toBe("standard");
  });

  describe("pools and images", () => {
    it("refuses an allowed image that no pool serves, naming it", () => {
      const found = messages(base({ pools: [{ name: "a", image: "img/a" }] }));
      expect(found).toHaveLength(1);
      expect(found[0]).toContain("img/b");
    });

    it("names every image that lacks a pool", () => {
      const found = messages(
        base({
          policy: { allowedImages: ["img/a", "img/b", "img/c"], defaultImage: "img/a" },
          pools: [{ name: "a", image: "img/a" }],
        }),
      );
      expect(found.join("\n")).toContain("img/b");
      expect(found.join("\n")).toContain("img/c");
    });

    it("refuses an allowed image whose only pool is in another resource class", () => {
      const found = messages(
        base({
          pools: [
            { name: "a", image: "img/a" },
            { name: "b-large", image: "img/b", resourceClass: "large" },
          ],
        }),
      );
      expect(found.join("\n")).toMatch(/img\/b.*standard/);
    });

    it("with policy.isolation gvisor, refuses an allowed image that only container pools serve", () => {
      const gvisorOnly = (pools: GatewayConfigInput["pools"]) =>
        base({
          policy: { allowedImages: ["img/a", "img/b"], defaultImage: "img/a", isolation: "gvisor" },
          pools,
        });
      expect(
        messages(
          gvisorOnly([
            { name: "a", image: "img/a", isolation: "gvisor" },
            { name: "b", image: "img/b" },
          ]),
        ),
      ).toEqual(["allowed image 'img/b' has no gvisor pool (without egress) in resource class 'standard'"]);
      expect(() =>
        gatewayConfigSchema.parse(
          gvisorOnly([
            { name: "a", image: "img/a", isolation: "gvisor" },
            { name: "b", image: "img/b", isolation: "gvisor" },
            { name: "b-plain", image: "img/b" },
          ]),
        ),
      ).not.toThrow();
      expect(gatewayConfigSchema.parse(base()).policy.isolation).toBe("container");
    });

    it("refuses an egress pool under gVisor", () => {
      expect(
        messages(
          base({
            pools: [
              { name: "a", image: "img/a" },
              { name: "b", image: "img/b" },
              { name: "b-out", image: "img/b", egress: true, isolation: "gvisor" },
            ],
          }),
        ),
      ).toEqual([
        "egress pools cannot run under gVisor yet (docs/isolation.md): use isolation container for it",
      ]);
    });

    it("accepts extra pools in other resource classes", () => {
      expect(() =>
        gatewayConfigSchema.parse(
          base({
            pools: [
              { name: "a", image: "img/a" },
              { name: "b", image: "img/b" },
              { name: "a-large", image: "img/a", resourceClass: "large" },
            ],
          }),
        ),
      ).not.toThrow();
    });

    it("refuses a pool name defined twice, naming it", () => {
      const found = messages(
        base({
          pools: [
            { name: "a", image: "img/a" },
            { name: "b", image: "img/b" },
            { name: "a", image: "img/a", resourceClass: "large" },
          ],
        }),
      );
      expect(found).toHaveLength(1);
      expect(found[0]).toContain("'a'");
    });

    it("refuses minIdle above maxTotal", () => {
      const found = issues(
        base({
          pools: [
            { name: "a", image: "img/a", minIdle: 5, maxTotal: 4 },
            { name: "b", image: "img/b" },
          ],
        }),
      );
      expect(found.map((issue) => issue.message)).toContain("minIdle cannot exceed maxTotal");
      expect(found[0]!.path.slice(0, 2)).toEqual(["pools", 0]);
    });

    it("accepts minIdle equal to maxTotal, and minIdle 0", () => {
      const config = gatewayConfigSchema.parse(
        base({
          pools: [
            { name: "a", image: "img/a", minIdle: 4, maxTotal: 4 },
            { name: "b", image: "img/b", minIdle: 0, maxTotal: 1 },
          ],
        }),
      );
      expect(config.pools.map((p) => [p.minIdle, p.maxTotal])).toEqual([
        [4, 4],
        [0, 1],
      ]);
    });

    it("refuses a configuration without pools", () => {
      expect(issues(base({ pools: [] })).length).toBeGreaterThan(0);
    });

    it.each(["A", "-a", "a b", "a/b", "", "a".repeat(64)])("refuses the pool name %j", (name) => {
      const found = issues(
        base({
          pools: [
            { name, image: "img/a" },
            { name: "b", image: "img/b" },
          ],
        }),
      );
      expect(found.some((issue) => issue.path.join(".") === "pools.0.name")).toBe(true);
    });

    it("refuses a default image outside the allowed images", () => {
      const found = issues(base({ policy: { allowedImages: ["img/a"], defaultImage: "img/b" } }));
      expect(found.some((issue) => issue.path.join(".") === "policy.defaultImage")).toBe(true);
    });
  });

  describe("unknown keys", () => {
    it("refuses an unknown top-level key, naming it", () => {
      const found = issues({ ...base(), prot: 8080 });
      expect(found).toHaveLength(1);
      expect(found[0]!.code).toBe("unrecognized_keys");
      expect(found[0]!.message).toContain("prot");
    });

    it.each([
      ["pools.0", (c: Record<string, unknown>) => ((c.pools as Record<string, unknown>[])[0]!.minIdel = 1)],
      ["policy", (c: Record<string, unknown>) => ((c.policy as Record<string, unknown>).maxSessions = 1)],
      ["auth", (c: Record<string, unknown>) => ((c.auth as Record<string, unknown>).jwtSecrett = "x")],
      ["limits", (c: Record<string, unknown>) => (c.limits = { maxJsonBodyByte: 1 })],
      ["intervals", (c: Record<string, unknown>) => (c.intervals = { warm: 1 })],
      ["authFailures", (c: Record<string, unknown>) => (c.authFailures = { max: 1 })],
    ])("refuses an unknown key in %s", (where, mutate) => {
      const config = structuredClone(base()) as unknown as Record<string, unknown>;
      mutate(config);
      const found = issues(config);
      expect(
        found.some((issue) => issue.code === "unrecognized_keys" && issue.path.join(".") === where),
      ).toBe(true);
    });
  });

  it.each([
    ["port", { port: 65_536 }],
    ["port", { port: -1 }],
    ["port", { port: 80.5 }],
    ["deployment", { deployment: "Prod" }],
    ["policyCacheTtlMs", { policyCacheTtlMs: 0 }],
  ])("refuses a bad %s", (field, overrides) => {
    const found = issues({ ...base(), ...overrides });
    expect(found.some((issue) => issue.path[0] === field)).toBe(true);
  });

  it("refuses an auth section without a key source", () => {
    const found = messages(base({ auth: {} }));
    expect(found.join("\n")).toContain("configure exactly one of");
  });
});
