/** `sandpool pools list` for people: the effective minimum beside the configured one, and why a pool fails. */
import { describe, expect, it } from "vitest";
import { renderPools } from "../../../src/cli/commands/pools-command.js";

const pool = {
  name: "default",
  image: "sandpool/sandbox:dev",
  resourceClass: "standard",
  minIdle: 2,
  maxTotal: 10,
  configured: { minIdle: 2, maxTotal: 10 },
  effectiveMinIdle: 5,
  idle: 4,
  parked: 6,
  leased: 3,
  starting: 1,
  warmupFailures: 0,
  warmHitRate: 0.75,
  engineStarts: { startsPerSecond: 2.5 },
  lastStartError: null,
};

describe("renderPools", () => {
  it("shows the effective minimum beside the configured one", () => {
    const text = renderPools([pool]);
    expect(text).toMatch(/^POOL\s+IMAGE\s+CLASS\s+MIN IDLE\s+EFFECTIVE\s+MAX TOTAL\s/);
    expect(text).toMatch(
      /^default\s+sandpool\/sandbox:dev\s+standard\s+2\s+5\s+10\s+4\s+6\s+3\s+1\s+0\s+75%\s+2\.5$/m,
    );
    expect(text.split("\n")).toHaveLength(2);
  });

  it("says why a failing pool's starts fail and when warm-up tries again", () => {
    const failing = {
      ...pool,
      name: "gpu",
      effectiveMinIdle: 2,
      idle: 0,
      parked: 0,
      leased: 0,
      starting: 0,
      warmupFailures: 7,
      warmHitRate: null,
      engineStarts: { startsPerSecond: null },
      lastStartError: {
        message: "no such image: sandpool/gpu:1",
        at: "2026-12-01T07:00:00.000Z",
        nextAttemptAt: "2026-12-01T07:00:32.000Z",
        consecutiveFailures: 6,
      },
    };
    const text = renderPools([pool, failing]);
    expect(text).toMatch(/^gpu\s+\S+\s+standard\s+2\s+2\s+10\s+0\s+0\s+0\s+0\s+7\s+-\s+-$/m);
    expect(text).toContain(
      "gpu: starts failing (6 in a row, last at 2026-12-01T07:00:00.000Z; next attempt at 2026-12-01T07:00:32.000Z): no such image: sandpool/gpu:1",
    );
    expect(text).not.toMatch(/^default: /m);
  });

  it("reads an older gateway's answer, without the effective minimum", () => {
    const { effectiveMinIdle: _e, lastStartError: _l, ...old } = pool;
    expect(renderPools([old])).toMatch(/^default\s+\S+\s+standard\s+2\s+2\s+10\s/m);
  });
});
