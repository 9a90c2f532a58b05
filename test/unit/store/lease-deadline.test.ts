import { describe, expect, it } from "vitest";
import { type Lease, leaseDeadline } from "../../../src/store/coordination/records.js";

function lease(overrides: Partial<Lease> = {}): Lease {
  return {
    sessionId: "s",
    workspace: "ws",
    pool: "default",
    image: "img",
    sandbox: {
      sandboxId: "sb",
      pool: "default",
      endpoint: "http://127.0.0.1:1",
      runtimeId: "1",
      innerSessionId: "inner",
      createdAt: 0,
    },
    createdAt: 0,
    lastActivityAt: 0,
    idleTimeoutSeconds: 60,
    maxLifetimeSeconds: 3600,
    ...overrides,
  };
}

describe("leaseDeadline", () => {
  it("is the idle deadline after the last activity", () => {
    expect(leaseDeadline(lease({ lastActivityAt: 10_000 }))).toBe(70_000);
  });

  it("is the lifetime deadline when that comes first", () => {
    expect(leaseDeadline(lease({ lastActivityAt: 3_590_000 }))).toBe(3_600_000);
  });

  it("a call in flight (busyUntil) holds off the idle deadline", () => {
    expect(leaseDeadline(lease({ lastActivityAt: 10_000, busyUntil: 500_000 }))).toBe(500_000);
  });

  it("a busyUntil already passed changes nothing", () => {
    expect(leaseDeadline(lease({ lastActivityAt: 10_000, busyUntil: 20_000 }))).toBe(70_000);
    expect(leaseDeadline(lease({ lastActivityAt: 10_000, busyUntil: 0 }))).toBe(70_000);
  });

  it("busyUntil never extends the session past its maximum lifetime", () => {
    expect(leaseDeadline(lease({ busyUntil: 10_000_000 }))).toBe(3_600_000);
  });

  it("counts from createdAt for the lifetime", () => {
    const created = 1_700_000_000_000;
    const l = lease({ createdAt: created, lastActivityAt: created, idleTimeoutSeconds: 7200 });
    expect(leaseDeadline(l)).toBe(created + 3_600_000);
  });
});
