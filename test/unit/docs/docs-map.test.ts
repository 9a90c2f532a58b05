/**
 * The README stays a short walk-through with a map of docs/, and the map stays whole: every
 * document in docs/ is linked from it, docs/api.md names every error code the gateway answers
 * with and docs/benchmarks.md every `npm run bench:*`, so nothing new is left out of them.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { errorStatus } from "../../../src/contract/error-codes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const readme = readFileSync(path.join(root, "README.md"), "utf8");

describe("the README and the map of docs/", () => {
  it("keeps the README short: a walk-through, the rest in docs/", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(230);
  });

  it("links every document in docs/ from the README", () => {
    const documents = readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md"));
    const unlinked = documents.filter((name) => !readme.includes(`](docs/${name})`));
    expect(unlinked, "add each to the README's Documentation list").toEqual([]);
  });

  it("names every error code in docs/api.md", () => {
    const api = readFileSync(path.join(root, "docs/api.md"), "utf8");
    const missing = Object.keys(errorStatus).filter((code) => !api.includes(`\`${code}\``));
    expect(missing, "add each to docs/api.md, section Errors").toEqual([]);
  });

  it("names every npm run bench:* script in docs/benchmarks.md", () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: object }).scripts,
    ).filter((name) => name.startsWith("bench:"));
    const headings = readFileSync(path.join(root, "docs/benchmarks.md"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("## "));
    const missing = scripts.filter(
      (name) => !headings.some((heading) => new RegExp(`\\b${name}\\b`).test(heading)),
    );
    expect(missing, "give each a section in docs/benchmarks.md").toEqual([]);
  });
});
