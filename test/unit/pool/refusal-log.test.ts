import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { type PoolHolding, REFUSAL_LOG_INTERVAL_MS, RefusalLog } from "../../../src/pool/refusal-log.js";

const HELD: PoolHolding = { members: 4, maxTotal: 4, idle: 0, parked: ["ws-a"], turningOver: 0 };

/** A logger whose warn lines land in `lines`. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { lines, log };
}

describe("RefusalLog", () => {
  it("writes one line per pool per interval, counting the refusals it left out, and reads the store only for a line", async () => {
    const { lines, log } = capture();
    let now = 1_000_000;
    const refusals = new RefusalLog(log, () => now);
    const holding = vi.fn(async () => HELD);

    for (let i = 0; i < 50; i++) refusals.refused("default", "ws-b", 12, holding);
    refusals.refused("other", "ws-b", 3, holding);
    await vi.waitFor(() => expect(lines).toHaveLength(2));
    expect(holding).toHaveBeenCalledTimes(2);
    expect(lines[0]).toMatchObject({ pool: "default", workspace: "ws-b", members: 4, parked: ["ws-a"] });
    expect(lines[0]?.refusedSinceLastLine).toBe(0);

    now += REFUSAL_LOG_INTERVAL_MS;
    refusals.refused("default", "ws-c", 40, holding);
    await vi.waitFor(() => expect(lines).toHaveLength(3));
    expect(lines[2]).toMatchObject({
      pool: "default",
      workspace: "ws-c",
      waitedMs: 40,
      refusedSinceLastLine: 49,
    });
  });

  it("still writes its line when the store cannot be read, and never throws to the refused lease", async () => {
    const { lines, log } = capture();
    const refusals = new RefusalLog(log, () => 0);
    expect(() =>
      refusals.refused("default", "ws-a", 5, async () => {
        throw new Error("store down");
      }),
    ).not.toThrow();
    await vi.waitFor(() => expect(lines).toHaveLength(1));
    expect(lines[0]?.msg).toContain("could not be read");
  });
});
