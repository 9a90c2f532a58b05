import { describe, expect, it } from "vitest";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import {
  DEFAULT_CHECKPOINT_DIR,
  DEFAULT_MAX_STORE_BYTES,
  DEFAULT_MIN_FREE_BYTES,
  hibernateSettingsSchema,
} from "../../../src/hibernate/hibernate-settings.js";

describe("hibernate settings", () => {
  it("keep checkpoints node-local by default, bounded by bytes and a free-disk floor", () => {
    expect(hibernateSettingsSchema.parse(undefined)).toEqual({
      checkpointDir: DEFAULT_CHECKPOINT_DIR,
      shared: false,
      maxStoreBytes: DEFAULT_MAX_STORE_BYTES,
      minFreeBytes: DEFAULT_MIN_FREE_BYTES,
    });
    expect(DEFAULT_MAX_STORE_BYTES).toBe(20 * 1024 ** 3);
    expect(DEFAULT_MIN_FREE_BYTES).toBe(2 * 1024 ** 3);
  });

  it("take a byte cap and a floor (0: none), and refuse a cap of 0 or a negative floor", () => {
    expect(hibernateSettingsSchema.parse({ maxStoreBytes: 1024, minFreeBytes: 0 })).toMatchObject({
      maxStoreBytes: 1024,
      minFreeBytes: 0,
    });
    expect(hibernateSettingsSchema.safeParse({ maxStoreBytes: 0 }).success).toBe(false);
    expect(hibernateSettingsSchema.safeParse({ minFreeBytes: -1 }).success).toBe(false);
    expect(hibernateSettingsSchema.safeParse({ maxStoreBytes: 1.5 }).success).toBe(false);
  });

  it("take a shared directory, and refuse a relative path or an unknown key", () => {
    expect(hibernateSettingsSchema.parse({ checkpointDir: "/mnt/checkpoints", shared: true })).toMatchObject({
      checkpointDir: "/mnt/checkpoints",
      shared: true,
    });
    expect(hibernateSettingsSchema.safeParse({ checkpointDir: "checkpoints" }).success).toBe(false);
    expect(hibernateSettingsSchema.safeParse({ checkpointDirectory: "/x" }).success).toBe(false);
  });

  it("are part of the gateway's configuration", () => {
    expect(gatewayConfigSchema.shape.hibernate).toBe(hibernateSettingsSchema);
  });
});
