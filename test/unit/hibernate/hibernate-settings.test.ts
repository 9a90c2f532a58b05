import { describe, expect, it } from "vitest";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import {
  DEFAULT_CHECKPOINT_DIR,
  hibernateSettingsSchema,
} from "../../../src/hibernate/hibernate-settings.js";

describe("hibernate settings", () => {
  it("keep checkpoints node-local by default", () => {
    expect(hibernateSettingsSchema.parse(undefined)).toEqual({
      checkpointDir: DEFAULT_CHECKPOINT_DIR,
      shared: false,
    });
  });

  it("take a shared directory, and refuse a relative path or an unknown key", () => {
    expect(hibernateSettingsSchema.parse({ checkpointDir: "/mnt/checkpoints", shared: true })).toEqual({
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
