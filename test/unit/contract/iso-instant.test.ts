/**
 * The instants the admin API and the CLI accept (src/contract/iso-instant.ts): a date is a
 * UTC day, a date-time must name its zone, whatever the machine's own zone.
 */
import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { instantOption, sinceOption } from "../../../src/cli/admin/admin-command-kit.js";
import { parseIsoInstant } from "../../../src/contract/iso-instant.js";

const iso = (value: string) => {
  const parsed = parseIsoInstant(value);
  return parsed.ok ? parsed.date.toISOString() : parsed.reason;
};

describe("parseIsoInstant", () => {
  it("reads a date as the start of that UTC day", () => {
    expect(iso("2026-01-01")).toBe("2026-01-01T00:00:00.000Z");
  });

  it("reads a date-time with Z or an offset, in any of the ISO spellings", () => {
    expect(iso("2026-01-01T10:00Z")).toBe("2026-01-01T10:00:00.000Z");
    expect(iso("2026-01-01 10:00:30z")).toBe("2026-01-01T10:00:30.000Z");
    expect(iso("2026-01-01T10:00:00.5+01:00")).toBe("2026-01-01T09:00:00.500Z");
    expect(iso("2026-01-01T10:00-0130")).toBe("2026-01-01T11:30:00.000Z");
  });

  it("refuses a date-time without a zone, saying so", () => {
    for (const value of ["2026-01-01T10:00", "2026-01-01 10:00:00", "2026-01-01T10:00:00.123"]) {
      const parsed = parseIsoInstant(value);
      expect(parsed.ok, value).toBe(false);
      expect(!parsed.ok && parsed.reason).toMatch(/no time zone/);
    }
  });

  it("refuses what is not a date, or a day the calendar lacks", () => {
    for (const value of [
      "yesterday",
      "2026-1-1",
      "2026-02-30",
      "2026-13-01",
      "2026-01-01T25:00Z",
      "20260101",
    ])
      expect(parseIsoInstant(value).ok, value).toBe(false);
  });
});

describe("the CLI's --since and --until", () => {
  it("takes the same instants as the API, and a duration for --since", () => {
    expect(instantOption("2026-01-01")).toBe("2026-01-01T00:00:00.000Z");
    expect(sinceOption("2026-01-01T10:00+02:00")).toBe("2026-01-01T08:00:00.000Z");
    const now = Date.now();
    expect(Math.abs(new Date(sinceOption("1h")).getTime() - (now - 3_600_000))).toBeLessThan(5_000);
  });

  it("refuses a date-time without a zone as a usage error (exit 2), with a one-line reason", () => {
    for (const parse of [instantOption, sinceOption]) {
      expect(() => parse("2026-01-01T10:00")).toThrow(InvalidArgumentError);
      expect(() => parse("2026-01-01T10:00")).toThrow(/no time zone: add Z \(UTC\) or an offset/);
      expect(() => parse("soon")).toThrow(/got 'soon'/);
    }
  });
});
