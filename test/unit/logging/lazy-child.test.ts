import { describe, expect, it, vi } from "vitest";
import { createLogger } from "../../../src/logging/create-logger.js";
import { lazyChild } from "../../../src/logging/lazy-child.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("test", "info", { write: (line: string) => lines.push(JSON.parse(line)) });
  return { lines, log };
}

describe("lazyChild", () => {
  it("makes no child until the logger is used", () => {
    const { log } = capture();
    const child = vi.spyOn(log, "child");
    lazyChild(log, { requestId: "r-1" });
    expect(child).not.toHaveBeenCalled();
  });

  it("writes lines with the child's bindings, and makes the child once", () => {
    const { lines, log } = capture();
    const child = vi.spyOn(log, "child");
    const lazy = lazyChild(log, { requestId: "r-1" });
    lazy.info("first");
    lazy.warn({ status: 502 }, "second");
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { msg: "first", requestId: "r-1", name: "test" },
      { msg: "second", requestId: "r-1", status: 502, level: 40 },
    ]);
  });

  it("is the child for levels, grandchildren and bindings", () => {
    const { lines, log } = capture();
    const lazy = lazyChild(log, { requestId: "r-2" });
    expect(lazy.isLevelEnabled("debug")).toBe(false);
    lazy.level = "debug";
    expect(lazy.level).toBe("debug");
    expect(log.level).toBe("info");
    lazy.debug("now heard");
    lazy.child({ step: "forward" }).info("deeper");
    expect(lazy.bindings()).toMatchObject({ requestId: "r-2" });
    expect(lines).toMatchObject([
      { msg: "now heard", requestId: "r-2" },
      { msg: "deeper", requestId: "r-2", step: "forward" },
    ]);
  });
});
