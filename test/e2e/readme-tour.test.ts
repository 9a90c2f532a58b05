/**
 * The README's tour, run as a reader would run it, against a real `sandpool dev` (the built CLI,
 * process runtime, a free port, a scratch directory as the repository's root): every `sh` block
 * of the sections "A tour of every call" and "The operator's first five minutes", in order, in
 * one shell whose variables and functions carry from block to block; each must exit 0, and
 * print what the `text` block right after it shows (`...` standing for anything), so the README
 * cannot drift from what sandpool answers.
 *
 * Lines that set SANDPOOL_URL, SANDPOOL_TOKEN or SANDPOOL_ADMIN_TOKEN from the banner are this
 * test's to set; `npx sandpool` runs the built CLI. Needs curl and jq, as the README says.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliServer, cliPath, resolvePython, startCliServer } from "../support/cli.js";
import { freePort } from "../support/dev-cli-gateway.js";

const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
const TOUR_SECTIONS = ["A tour of every call", "The operator's first five minutes"];
/** Set from the banner in the README; the test sets them from its own gateway. */
const FROM_THE_BANNER = /^export SANDPOOL_(URL|TOKEN|ADMIN_TOKEN)=/;
/**
 * Commands that may run again harmlessly: a block of them only is retried until its output
 * matches, since the audit is written a moment after a refusal.
 */
const RETRYABLE =
  /^npx sandpool (audit|usage|sessions list|pools list|policy get|policy set \S+ --clear|token)\b/;

interface TourStep {
  commands: string;
  expected?: string;
}

/** The `sh` blocks of the tour's sections, each with the `text` block that follows it, if any. */
function tourSteps(markdown: string): TourStep[] {
  const steps: TourStep[] = [];
  const sections = markdown
    .split(/^## /m)
    .filter((section) => TOUR_SECTIONS.some((t) => section.startsWith(`${t}\n`)));
  for (const section of sections) {
    const blocks = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)];
    blocks.forEach((block, index) => {
      if (block[1] !== "sh") return;
      const next = blocks[index + 1];
      const between = next ? section.slice(block.index! + block[0].length, next.index) : "";
      const expected = next?.[1] === "text" && between.trim() === "" ? next[2] : undefined;
      steps.push({ commands: block[2]!, expected });
    });
  }
  return steps;
}

/** `...` matches anything (lines included); trailing spaces and blank lines at the end never count. */
function matches(actual: string, expected: string): boolean {
  const tidy = (text: string) =>
    text
      .split("\n")
      .map((line) => line.trimEnd())
      .join("\n")
      .trim();
  const pattern = tidy(expected)
    .split("...")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*?");
  return new RegExp(`^${pattern}$`).test(tidy(actual));
}

function hasCommand(name: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
}

describe("the README's tour, against sandpool dev", () => {
  const steps = tourSteps(readme);
  const dir = mkdtempSync(path.join(tmpdir(), "sandpool-readme-tour-"));
  const bin = path.join(dir, "bin");
  const state = path.join(dir, "state.sh");
  let server: CliServer | undefined;
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    for (const tool of ["curl", "jq", "bash"]) {
      if (!hasCommand(tool)) throw new Error(`the README's tour needs ${tool}: install it`);
    }
    execFileSync("mkdir", ["-p", bin]);
    writeFileSync(
      path.join(bin, "npx"),
      [
        "#!/bin/sh",
        `[ "$1" = sandpool ] || { echo "the tour runs only npx sandpool, not npx $1" >&2; exit 127; }`,
        "shift",
        `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(cliPath)} "$@"`,
        "",
      ].join("\n"),
    );
    chmodSync(path.join(bin, "npx"), 0o755);
    const port = await freePort();
    // As `npm run dev` from the repository's root: the default data directory, .sandpool/dev,
    // which `npx sandpool token` reads too. The first start runs PGlite's initdb.
    server = await startCliServer(
      ["dev", "--runtime", "process", "--port", String(port), "--python", resolvePython()],
      /^SANDPOOL_ADMIN_TOKEN=(\S+)/,
      { cwd: dir, timeoutMs: 90_000, env: { SANDPOOL_LOG_LEVEL: "warn" } },
    );
    env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      SANDPOOL_URL: `http://127.0.0.1:${port}`,
      SANDPOOL_TOKEN: /^SANDPOOL_TOKEN=(\S+)$/m.exec(server.output().stdout)?.[1] ?? "",
      SANDPOOL_ADMIN_TOKEN: server.url,
      NO_COLOR: "1",
    };
    writeFileSync(state, "");
  }, 120_000);

  afterAll(async () => {
    await server?.stop(20_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("has a tour: blocks to run, most with the output they answer", () => {
    expect(steps.length).toBeGreaterThanOrEqual(8);
    expect(steps.filter((step) => step.expected !== undefined).length).toBeGreaterThanOrEqual(8);
    const tour = steps.map((step) => step.commands).join("\n");
    for (const tool of ["code_execution", "bash_code_execution", "text_editor_code_execution"]) {
      expect(tour).toContain(`"tool":"${tool}"`);
    }
    for (const call of ["-F file=@", "/files/list", "/files?path=", "text/event-stream", "-X DELETE"]) {
      expect(tour).toContain(call);
    }
    for (const command of ["policy set", "explain", "audit", "token"]) {
      expect(tour).toContain(`npx sandpool ${command}`);
    }
  });

  steps.forEach((step, index) => {
    const title = step.commands.split("\n").find((line) => line.trim() !== "" && !FROM_THE_BANNER.test(line));
    it(`step ${index + 1}: ${title}`, async () => {
      // The tour's scratch files go to /tmp; this run's go to its own directory.
      const commands = step.commands
        .split("\n")
        .filter((line) => !FROM_THE_BANNER.test(line))
        .join("\n")
        .replaceAll("/tmp/", `${dir}/`);
      // One shell per block, carrying the variables and functions of the blocks before it.
      const script = [
        `. ${JSON.stringify(state)}`,
        "set -a -e -o pipefail",
        commands,
        "set +e",
        `{ export -p; declare -f; } > ${JSON.stringify(state)}`,
      ].join("\n");
      const lines = commands.split("\n").filter((line) => line.trim() !== "" && !line.startsWith(" "));
      const attempts = lines.every((line) => RETRYABLE.test(line)) ? 10 : 1;
      let result = spawnSync("bash", ["-c", script], { cwd: dir, env, encoding: "utf8", timeout: 60_000 });
      for (let attempt = 1; attempt < attempts; attempt++) {
        if (result.status === 0 && (step.expected === undefined || matches(result.stdout, step.expected)))
          break;
        await new Promise((resolve) => setTimeout(resolve, 500));
        result = spawnSync("bash", ["-c", script], { cwd: dir, env, encoding: "utf8", timeout: 60_000 });
      }
      const shown = `\n--- commands\n${commands}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
      expect(result.status, `the block failed${shown}`).toBe(0);
      if (step.expected !== undefined) {
        expect(
          matches(result.stdout, step.expected),
          `the output is not the README's:\n${step.expected}${shown}`,
        ).toBe(true);
      }
    }, 120_000);
  });
});
