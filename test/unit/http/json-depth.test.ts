/**
 * The nesting bound on JSON request bodies: found by the gateway fuzz suite, where an Execute
 * body with an unknown field nested 10,000 levels deep overflowed JSON.stringify's stack when
 * the gateway forwarded it (500 server.internal).
 */
import { describe, expect, it } from "vitest";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../../../src/http/common/read-json-body.js";

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("exceedsJsonDepth", () => {
  it("allows exactly the bound and refuses one level more, for arrays and objects", () => {
    expect(exceedsJsonDepth(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(exceedsJsonDepth(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
    const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    expect(exceedsJsonDepth(objects(3), 3)).toBe(false);
    expect(exceedsJsonDepth(objects(4), 3)).toBe(true);
  });

  it("counts depth, not the number of brackets: siblings do not add up", () => {
    expect(exceedsJsonDepth(`[${"[],".repeat(10_000)}[]]`, 2)).toBe(false);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(exceedsJsonDepth(JSON.stringify({ code: "[".repeat(1_000) }), 2)).toBe(false);
    expect(exceedsJsonDepth(JSON.stringify({ code: `\\"${"{".repeat(1_000)}` }), 2)).toBe(false);
    expect(exceedsJsonDepth(`{"a":"\\\\",${'"b":['.repeat(3)}]]]}`, 3)).toBe(true);
  });

  it("is not fooled by unbalanced closers into allowing more", () => {
    expect(exceedsJsonDepth(`]]]]${nested(5)}`, 4)).toBe(true);
    expect(exceedsJsonDepth(nested(100_000), MAX_JSON_DEPTH)).toBe(true);
  });
});
