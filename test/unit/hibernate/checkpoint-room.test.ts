/**
 * The bounds a checkpoint must fit (src/hibernate/checkpoint-room.ts): the workspace's own,
 * then the store's byte cap and its disk's free floor, each refusal with its reason, and the
 * answer each reason gets (the workspace's quota, or the deployment's capacity).
 */
import { describe, expect, it } from "vitest";
import { errorStatus } from "../../../src/contract/error-codes.js";
import {
  CHECKPOINT_REFUSAL_REASONS,
  type CheckpointRoom,
  checkpointRefusal,
  refusalError,
} from "../../../src/hibernate/checkpoint-room.js";

const room = (over: Partial<CheckpointRoom> = {}): CheckpointRoom => ({
  workspaceCheckpoints: 1,
  workspaceBytes: 100,
  storeBytes: 5_000,
  freeBytes: 1_000_000,
  ...over,
});

describe("checkpointRefusal", () => {
  it("lets a checkpoint begin within every bound, and with none set", () => {
    expect(checkpointRefusal("acme", room(), {}, {})).toBeUndefined();
    expect(
      checkpointRefusal(
        "acme",
        room(),
        { maxCheckpoints: 2, maxBytes: 101 },
        { maxBytes: 5_001, minFreeBytes: 1_000_000 },
      ),
    ).toBeUndefined();
  });

  it("refuses at the store's byte cap and under its disk's free floor, naming the setting", () => {
    expect(checkpointRefusal("acme", room({ storeBytes: 5_000 }), {}, { maxBytes: 5_000 })).toEqual({
      reason: "store_bytes",
      message: expect.stringContaining("hibernate.maxStoreBytes 5000"),
    });
    expect(checkpointRefusal("acme", room({ freeBytes: 999 }), {}, { minFreeBytes: 1_000 })).toEqual({
      reason: "disk_free",
      message: expect.stringContaining("hibernate.minFreeBytes 1000"),
    });
    expect(checkpointRefusal("acme", room({ freeBytes: 999 }), {}, { minFreeBytes: 1_000 })?.message).toMatch(
      /the session keeps running/,
    );
  });

  it("checks the workspace's own bounds first: a workspace at its quota is told so, whatever the store", () => {
    const full = { maxBytes: 1, minFreeBytes: Number.MAX_SAFE_INTEGER };
    expect(
      checkpointRefusal("acme", room({ workspaceCheckpoints: 2 }), { maxCheckpoints: 2 }, full)?.reason,
    ).toBe("workspace_sessions");
    expect(checkpointRefusal("acme", room({ workspaceBytes: 100 }), { maxBytes: 100 }, full)?.reason).toBe(
      "workspace_bytes",
    );
    expect(checkpointRefusal("acme", room(), {}, full)?.reason).toBe("store_bytes");
  });
});

describe("refusalError", () => {
  it("answers a workspace's bound as its quota (429) and a full store as capacity (503, Retry-After)", () => {
    for (const reason of CHECKPOINT_REFUSAL_REASONS) {
      const error = refusalError(reason, "why");
      const workspaceBound = reason.startsWith("workspace_");
      expect(error.code).toBe(workspaceBound ? "quota.hibernated_sessions" : "capacity.checkpoint_space");
      expect(error.status).toBe(workspaceBound ? 429 : 503);
      expect(error.message).toBe("why");
      if (!workspaceBound) expect(error.retryAfterSeconds).toBeGreaterThan(0);
    }
    expect(errorStatus["capacity.checkpoint_space"]).toBe(503);
  });
});
