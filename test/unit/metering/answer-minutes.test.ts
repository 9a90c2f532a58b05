/** AnswerMinutes: a replica's contract calls and 5xx answers per minute, the last hour kept. */
import { describe, expect, it } from "vitest";
import { AnswerMinutes } from "../../../src/metering/answer-minutes.js";

const MINUTE = 60_000;

describe("AnswerMinutes", () => {
  it("counts calls, 5xx answers and sandbox failures in the minute they were answered", () => {
    let now = 1_000 * MINUTE + 5_000;
    const minutes = new AnswerMinutes(() => now);
    for (const status of [200, 201, 404, 429, 500, 503, 502, 504]) minutes.count(status);
    now += MINUTE;
    minutes.count(502);
    const hour = minutes.lastHour();
    expect(hour).toHaveLength(61);
    expect(hour.at(-2)).toEqual({
      start: new Date(1_000 * MINUTE).toISOString(),
      calls: 8,
      serverErrors: 4,
      sandboxErrors: 2,
    });
    expect(hour.at(-1)).toMatchObject({ calls: 1, serverErrors: 1, sandboxErrors: 1 });
    expect(hour.slice(0, -2).every((minute) => minute.calls === 0)).toBe(true);
  });

  it("forgets minutes older than the hour, and a slot reused an hour later starts from zero", () => {
    let now = 5_000 * MINUTE;
    const minutes = new AnswerMinutes(() => now);
    minutes.count(500);
    now += 61 * MINUTE; // the same ring slot, an hour and a minute later
    minutes.count(200);
    const hour = minutes.lastHour();
    expect(hour.reduce((sum, minute) => sum + minute.serverErrors, 0)).toBe(0);
    expect(hour.at(-1)).toMatchObject({ calls: 1, serverErrors: 0 });
    expect(Date.parse(hour[0]!.start)).toBe(now - 60 * MINUTE);
  });
});
