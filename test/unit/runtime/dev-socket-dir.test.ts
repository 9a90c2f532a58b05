import os from "node:os";
import { describe, expect, it } from "vitest";
import { devSocketDir } from "../../../src/cli/choose-dev-runtime.js";

describe("dev mode's socket directory", () => {
  it("sits in the data directory when its path is short", () => {
    expect(devSocketDir("/home/me/.sandpool/dev")).toBe("/home/me/.sandpool/dev/sockets");
  });

  it("moves to a short, per-data-directory one in the temporary directory otherwise", () => {
    const deep = `/home/me/${"project/".repeat(12)}.sandpool/dev`;
    const dir = devSocketDir(deep);
    expect(dir.startsWith(os.tmpdir())).toBe(true);
    expect(dir).toBe(devSocketDir(deep));
    expect(dir).not.toBe(devSocketDir(`${deep}2`));
    // The dev deployment's sockets below it fit Linux's 107 bytes.
    expect(Buffer.byteLength(`${dir}/dev/${"x".repeat(24)}/sandbox.sock`)).toBeLessThanOrEqual(107);
  });
});
