import { describe, expect, it } from "vitest";
import {
  CappedOutput,
  capJsonCost,
  capText,
  headWithin,
  jsonCost,
  truncationMarker,
} from "../../../src/sandbox/tools/capped-output.js";
import { numbered, numberedWithin } from "../../../src/sandbox/tools/text-editor-format.js";

describe("capText", () => {
  it("leaves a text that fits alone", () => {
    expect(capText("héllo", 6)).toBe("héllo");
  });

  it("cuts a long text to the cap, marker included, and says how much was dropped", () => {
    const text = "x".repeat(10_000);
    const capped = capText(text, 1024);
    expect(Buffer.byteLength(capped)).toBeLessThanOrEqual(1024);
    const kept = capped.indexOf("\n[output truncated");
    expect(capped.slice(kept)).toBe(truncationMarker(10_000 - kept));
  });

  it("never cuts a character in half", () => {
    const text = "€".repeat(5_000) + "😀".repeat(5_000);
    for (const cap of [1000, 1001, 1002, 16_000, 16_001]) {
      const capped = capText(text, cap);
      expect(capped).not.toContain("\uFFFD");
      expect(Buffer.byteLength(capped)).toBeLessThanOrEqual(cap);
    }
  });
});

describe("headWithin", () => {
  it("keeps whole characters only", () => {
    expect(headWithin("a€b", 3)).toBe("a");
    expect(headWithin("a€b", 4)).toBe("a€");
    expect(headWithin("😀😀", 5)).toBe("😀");
    expect(headWithin("😀😀", 3)).toBe("");
  });
});

describe("numberedWithin", () => {
  it("renders like numbered when everything fits", () => {
    const lines = ["a", "b", "c"];
    expect(numberedWithin(lines, 7, 1_000)).toEqual({
      text: numbered(lines, 7),
      omittedBytes: 0,
      firstOmittedLine: undefined,
    });
  });

  it("stops at the budget and counts the rest exactly as numbered would render it", () => {
    const lines = Array.from({ length: 2_000_000 }, (_, i) => (i % 3 === 0 ? "é" : ""));
    const shown = numberedWithin(lines, 1, 4096);
    expect(Buffer.byteLength(shown.text)).toBeLessThanOrEqual(4096);
    const kept = shown.text.split("\n").length - 1;
    expect(shown.firstOmittedLine).toBe(kept + 1);
    // Past line 999999 the number is wider than its 6-column pad: counted too.
    expect(shown.omittedBytes).toBe(Buffer.byteLength(numbered(lines, 1)) - Buffer.byteLength(shown.text));
    // Two million lines: seconds on a loaded 2-core machine, not the unit default of 5.
  }, 60_000);
});

describe("capJsonCost", () => {
  it("counts what JSON.stringify writes", () => {
    expect(jsonCost('a\n\u0001"é😀')).toBe(1 + 2 + 6 + 2 + 2 + 4);
  });

  it("leaves a text within the bound alone", () => {
    expect(capJsonCost("a\nb", 4)).toBe("a\nb");
  });

  it("cuts control characters to the bound, marker included, counting what an earlier cap dropped", () => {
    const out = new CappedOutput(10_000);
    out.push(Buffer.alloc(12_000, 1));
    const capped = capJsonCost(out.text(), 4096);
    expect(jsonCost(capped)).toBeLessThanOrEqual(4096);
    const kept = capped.indexOf("\n[output truncated");
    expect(capped.slice(kept)).toBe(truncationMarker(12_000 - kept));
    expect(capped.slice(0, kept)).toBe("\u0001".repeat(kept));
  });

  it("never leaves half a surrogate pair", () => {
    const capped = capJsonCost(`\u0001${"😀".repeat(2000)}`, 1000);
    expect(capped).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});

describe("CappedOutput notes", () => {
  it("keeps the server's note after the marker when the output was cut", () => {
    const out = new CappedOutput(4);
    out.push(Buffer.from("abcdefgh"));
    out.note("\nExecution timed out after 1 s.\n");
    expect(out.text()).toBe(`abcd${truncationMarker(4)}\nExecution timed out after 1 s.\n`);
  });

  it("adds the note right after output that was not cut", () => {
    const out = new CappedOutput(100);
    out.push(Buffer.from("ab"));
    out.note("\nnote\n");
    expect(out.text()).toBe("ab\nnote\n");
  });
});

describe("CappedOutput and JSON escaping", () => {
  it("cuts kept control characters to twice the cap once escaped, counting all that was dropped, notes kept", () => {
    const out = new CappedOutput(1024);
    out.push(Buffer.alloc(5000, 1));
    out.note("\nExecution timed out after 1 s.\n");
    const text = out.text();
    const kept = text.indexOf("\n[output truncated");
    expect(text.slice(0, kept)).toBe("\u0001".repeat(kept));
    expect(jsonCost(text.slice(0, kept))).toBeLessThanOrEqual(2048);
    expect(text.slice(kept)).toBe(`${truncationMarker(5000 - kept)}\nExecution timed out after 1 s.\n`);
  });
});
