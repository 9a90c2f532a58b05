import { describe, expect, it } from "vitest";
import { isBadRequestTarget } from "../../../src/http/common/request-target.js";

const good = [
  "/",
  "/sessions",
  "/sessions/",
  "/sessions/abc_DEF-123/exec",
  "/sessions/abc/files/some/dir/file.txt",
  "/sessions/abc/files?path=a/b.txt",
  "/sessions/abc/files?path=../x", // the query is the file route's to judge, not the transport's
  "/sessions/abc/files?path=a//b",
  "/sessions/abc/files?path=%2e%2e%2fx",
  "/v1/sandbox/sessions",
  "/.well-known/thing",
  "/a/.hidden",
  "/a/..b",
  "/a/b..",
  "/a/...",
  "/a/b.c/d",
  "/a%20b",
  "/a%41",
  "/%e2%82%ac",
  "/metrics",
  "/healthz?",
];

const bad: [string, string][] = [
  ["", "empty"],
  ["*", "asterisk form"],
  ["sessions", "no leading slash"],
  ["http://example.com/sessions", "absolute form"],
  ["//sessions", "leading double slash"],
  ["/sessions//abc", "inner double slash"],
  ["/sessions/abc//", "trailing double slash"],
  ["/..", "dot-dot at the root"],
  ["/../etc/passwd", "dot-dot segment"],
  ["/sessions/../admin", "inner dot-dot"],
  ["/sessions/..", "trailing dot-dot"],
  ["/sessions/./abc", "single dot segment"],
  ["/.", "single dot at the root"],
  ["/sessions/.", "trailing single dot"],
  ["/sessions/..?x=1", "dot-dot before a query"],
  ["/sessions/%2e%2e/admin", "encoded dots, lower case"],
  ["/sessions/%2E%2E/admin", "encoded dots, upper case"],
  ["/sessions/.%2e/admin", "half-encoded dot-dot"],
  ["/sessions/%2e/x", "encoded single dot"],
  ["/sessions%2fadmin", "encoded slash"],
  ["/sessions%2Fadmin", "encoded slash, upper case"],
  ["/sessions%5cadmin", "encoded backslash"],
  ["/sessions%5Cadmin", "encoded backslash, upper case"],
  ["/sessions%00", "encoded NUL"],
  ["/sessions\\admin", "backslash"],
  ["/sessions/\u0000", "NUL"],
  ["/sessions/\u0001", "control character"],
  ["/sessions/\t", "tab"],
  ["/sessions/\r\nX-Injected: 1", "CR LF"],
  ["/sessions/\u007f", "DEL"],
  ["/sessions?path=\u0000", "NUL in the query"],
  ["/sessions?path=a\\b", "backslash in the query"],
];

describe("isBadRequestTarget", () => {
  it.each(good)("accepts %j", (target) => {
    expect(isBadRequestTarget(target)).toBe(false);
  });

  it.each(bad)("refuses %j (%s)", (target) => {
    expect(isBadRequestTarget(target)).toBe(true);
  });
});
