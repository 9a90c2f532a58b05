import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readJson, readText, repoPath } from "./deploy-files.js";

const dockerfile = readText("deploy/gateway/Dockerfile");
const dockerignore = readText(".dockerignore")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith("#"));

/** The JSON-form argument of the last `INSTRUCTION [...]` line (the one in force). */
function execForm(instruction: string): string[] {
  const lines = [...dockerfile.matchAll(new RegExp(`^${instruction}\\s+(\\[.*\\])\\s*$`, "gm"))];
  if (lines.length === 0) throw new Error(`no ${instruction} in exec form`);
  return JSON.parse(lines.at(-1)![1]!) as string[];
}

/** Sources the build stage copies from the context (not from another stage). */
function contextSources(): string[] {
  return [...dockerfile.matchAll(/^COPY\s+(?!--from)(.+)$/gm)].flatMap((match) => {
    const parts = match[1]!.trim().split(/\s+/);
    return parts.slice(0, -1);
  });
}

describe("deploy/gateway/Dockerfile", () => {
  it("builds on node:22-bookworm-slim in two stages and runs as a non-root user", () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:22-bookworm-slim$/m);
    expect([...dockerfile.matchAll(/^FROM \$\{NODE_IMAGE\}/gm)]).toHaveLength(2);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
    expect(dockerfile).toMatch(/npm run build\b/);
    expect(dockerfile).toMatch(/npm prune --omit=dev\b/);
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)$/gm)].map((m) => m[1]!);
    expect(users.at(-1)).toMatch(/^[1-9]\d*:[1-9]\d*$/);
  });

  it("runs the sandpool CLI, `serve` with the mounted configuration by default", () => {
    expect(execForm("ENTRYPOINT")).toEqual(["node", "--single-threaded-gc", "/app/dist/cli/main.js"]);
    expect(execForm("CMD")).toEqual(["serve", "--config", "/etc/sandpool/sandpool.yaml"]);
    // The CLI's bin is the file the entrypoint runs.
    const pkg = readJson<{ bin: Record<string, string> }>("package.json");
    expect(`/app/${pkg.bin.sandpool}`).toBe("/app/dist/cli/main.js");
  });

  it("caps V8's young generation (the RSS of a gateway holding many sessions), overridable", () => {
    expect(dockerfile).toMatch(/^ENV NODE_OPTIONS=--max-semi-space-size=4$/m);
  });

  it("ships dist/, migrations/ side by side, production node_modules and package.json", () => {
    for (const target of ["./dist", "./migrations", "./node_modules", "./package.json"])
      expect(dockerfile).toMatch(new RegExp(`^COPY .* ${target.replace(".", "\\.")}$`, "m"));
    expect(dockerfile).toMatch(/^WORKDIR \/app$/m);
  });

  it("checks /healthz with node (the image has no curl)", () => {
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\\\n\s+CMD \["node", "-e", ".*\/healthz.*"\]$/m);
  });

  it("copies everything `npm run build` reads, and .dockerignore excludes none of it", () => {
    const sources = contextSources();
    for (const source of sources) expect(existsSync(repoPath(source)), source).toBe(true);
    const pkg = readJson<{ scripts: Record<string, string> }>("package.json");
    // Every path the build script names that exists in the repository (not its outputs).
    const read = pkg.scripts
      .build!.split(/\s+|&&/)
      .filter((token) => /^[\w.-]+(\/[\w.-]+)*$/.test(token) && !token.startsWith("dist"))
      .filter((token) => existsSync(repoPath(token)));
    expect(read.length).toBeGreaterThan(0);
    for (const path of read)
      expect(
        sources.some((source) => path === source || path.startsWith(`${source.replace(/\/$/, "")}/`)),
        `${path} is read by npm run build but not copied into the build stage`,
      ).toBe(true);
    for (const source of [...sources, "tsconfig.json"])
      expect(
        dockerignore.some((pattern) => source === pattern || source.startsWith(`${pattern}/`)),
        source,
      ).toBe(false);
  });
});

describe(".dockerignore", () => {
  it("keeps local builds, dependencies and history out of the context", () => {
    for (const entry of ["node_modules", "dist", ".git", "deploy/sandbox/.build"])
      expect(dockerignore).toContain(entry);
  });
});
