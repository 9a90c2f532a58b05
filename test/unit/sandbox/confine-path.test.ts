import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { isInside, relativeSegments } from "../../../src/sandbox/files/confine-path.js";

describe("relativeSegments", () => {
  it.each([
    ["a.txt", ["a.txt"]],
    ["dir/a.txt", ["dir", "a.txt"]],
    ["./dir/./a.txt", ["dir", "a.txt"]],
    ["dir//a.txt", ["dir", "a.txt"]],
    ["dir/", ["dir"]],
    ["", []],
    [".", []],
    ["./", []],
    ["..a", ["..a"]],
    ["a..", ["a.."]],
    ["...", ["..."]],
    [".hidden/x", [".hidden", "x"]],
    ["with space/ü.txt", ["with space", "ü.txt"]],
  ])("%j -> %j", (requested, segments) => {
    expect(relativeSegments(requested)).toEqual(segments);
  });

  it.each([
    ["/etc/passwd", "absolute"],
    ["/", "the root"],
    ["..", "parent"],
    ["../x", "leading parent"],
    ["a/../b", "inner parent, even one that stays inside"],
    ["a/..", "trailing parent"],
    ["a/b/../../..", "climbing out"],
    ["a\\..\\b", "backslashes"],
    ["a\u0000b", "NUL"],
    ["a\nb", "newline"],
    ["a\u001fb", "unit separator"],
    ["a\u007fb", "DEL"],
  ])("refuses %j (%s) with path.outside_workspace", (requested) => {
    let caught: unknown;
    try {
      relativeSegments(requested);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SandpoolError);
    expect((caught as SandpoolError).code).toBe("path.outside_workspace");
    expect((caught as SandpoolError).status).toBe(403);
  });

  it("prints control characters escaped in the refusal", () => {
    expect(() => relativeSegments("bad\u0000\nname")).toThrow("bad\\u0000\\nname");
  });
});

describe("isInside", () => {
  it.each([
    ["/ws", "/ws", true],
    ["/ws", "/ws/a", true],
    ["/ws", "/ws/a/b", true],
    ["/ws", "/ws/..a", true],
    ["/ws", "/", false],
    ["/ws", "/other", false],
    ["/ws", "/ws-other", false],
    ["/ws", "/wsx/a", false],
    ["/ws/a", "/ws", false],
  ])("isInside(%j, %j) is %s", (root, candidate, inside) => {
    expect(isInside(root, candidate)).toBe(inside);
  });
});
