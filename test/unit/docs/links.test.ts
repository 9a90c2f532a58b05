/**
 * The repository's documentation points only at what the repository holds: every relative
 * link in README.md and docs/*.md names a file that exists (and, with `#anchor`, a heading
 * of it), every source comment citing `docs/architecture.md, "Heading"` names a heading
 * that exists, and no file cites the design notes outside the clone.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const architecture = path.join(root, "docs/architecture.md");
const thisFile = fileURLToPath(import.meta.url);

function markdownFiles(): string[] {
  const docs = path.join(root, "docs");
  const inDocs = existsSync(docs)
    ? readdirSync(docs, { recursive: true, encoding: "utf8" })
        .filter((name) => name.endsWith(".md"))
        .map((name) => path.join(docs, name))
    : [];
  return [path.join(root, "README.md"), ...inDocs];
}

/** The text outside fenced code blocks and inline code, where a link or heading can be. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to dashes. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function headingsOf(file: string): string[] {
  const text = readFileSync(file, "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "");
  return [...text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)].map((match) => match[1]!);
}

/** The anchors of a file's headings, a repeated one numbered as GitHub does (`-1`, `-2`). */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const heading of headingsOf(file)) {
    const anchor = anchorOf(heading);
    const count = seen.get(anchor) ?? 0;
    seen.set(anchor, count + 1);
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
  }
  return anchors;
}

/** Relative link targets (`[text](target)`, images too); URLs with a scheme are not ours to check. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

function sourceFiles(): string[] {
  const files: string[] = [path.join(root, "vitest.config.ts"), path.join(root, "README.md")];
  for (const folder of ["src", "test", "scripts", "deploy", "helm"]) {
    for (const name of readdirSync(path.join(root, folder), { recursive: true, encoding: "utf8" })) {
      if (name.includes("node_modules") || !/\.(ts|mts|mjs|js|lua|ya?ml|sh|md)$/.test(name)) continue;
      files.push(path.join(root, folder, name));
    }
  }
  return files.filter((file) => file !== thisFile);
}

describe("documentation links", () => {
  it("has an architecture document", () => {
    expect(existsSync(architecture)).toBe(true);
  });

  for (const file of markdownFiles()) {
    const name = path.relative(root, file);
    it(`${name}: every relative link resolves`, () => {
      const broken: string[] = [];
      for (const link of relativeLinks(readFileSync(file, "utf8"))) {
        const [target = "", anchor] = link.split("#", 2);
        const resolved = target === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(target));
        if (!existsSync(resolved)) broken.push(`${link}: no such file`);
        else if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor))
          broken.push(`${link}: no heading with that anchor`);
      }
      expect(broken).toEqual([]);
    });
  }

  it("every comment citing a heading of docs/architecture.md names one that exists", () => {
    const headings = new Set(headingsOf(architecture));
    const cited = /docs\/architecture\.md,\s*(?:\*\s*|\/\/\s*|#\s*|--\s*)?"([^"]+)"/g;
    const missing: string[] = [];
    let citations = 0;
    for (const file of sourceFiles()) {
      for (const match of readFileSync(file, "utf8").matchAll(cited)) {
        citations += 1;
        // A heading wrapped over two comment lines is read as one line.
        const heading = match[1]!.replace(/\s*\n\s*(?:\*|\/\/|#|--)?\s*/g, " ");
        if (!headings.has(heading)) missing.push(`${path.relative(root, file)}: "${heading}"`);
      }
    }
    expect(missing).toEqual([]);
    expect(citations).toBeGreaterThan(0);
  });

  it("no file cites the design notes or the contract outside the repository", () => {
    // The contract copy's test reads the shared document on purpose, to hold the copy to it.
    const readsShared = path.join(root, "test/unit/contract/openapi-copy.test.ts");
    const outside = new RegExp(["DESIGN\\.md", "\\.\\./shared/(?:contract|seeds|DESIGN)"].join("|"));
    const citing = sourceFiles()
      .filter((file) => file !== readsShared)
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, index) =>
            outside.test(line) ? [`${path.relative(root, file)}:${index + 1}`] : [],
          ),
      );
    expect(citing).toEqual([]);
  });
});
