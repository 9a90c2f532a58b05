/**
 * `sandpool config example` and `sandpool config check` as a user runs them: the example is a
 * file the check accepts, the environment wins over the file, secrets never reach the output,
 * and every problem is listed with exit code 2; --json gives programs the same as objects.
 * Needs `npm run build` first.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configEnvVariables } from "../../src/config/config-env.js";
import { requireBuiltCli, runCli } from "../support/cli.js";

beforeAll(() => requireBuiltCli());

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "sandpool-config-e2e-"));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The configuration variables of the test's own environment, blanked (empty means unset). */
const hermetic = Object.fromEntries(configEnvVariables.map((variable) => [variable.name, ""]));

function config(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(["config", ...args], { env: { ...hermetic, ...env } });
}

async function file(name: string, text: string): Promise<string> {
  const target = path.join(scratch, name);
  await writeFile(target, text);
  return target;
}

const SECRET = "an-e2e-secret-that-is-at-least-32-bytes-long";

describe("sandpool config --help", () => {
  it("is listed by sandpool --help", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\s+config\s+Print an example configuration file, or check one/m);
  });

  it("lists example and check", async () => {
    const result = await config(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: sandpool config \[options\] \[command\]/m);
    expect(result.stdout).toMatch(
      /^\s+example \[options\]\s+Print a complete, commented configuration file/m,
    );
    expect(result.stdout).toMatch(
      /^\s+check \[options\]\s+Check a configuration and print the effective one/m,
    );
  });

  it("documents --config and the exit code of sandpool config check", async () => {
    const result = await config(["check", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/--config <file>\s+YAML configuration file/);
    expect(result.stdout).toMatch(/exit\s+with\s+code\s+2\./);
  });
});

describe("sandpool config example", () => {
  it("prints a file that sandpool config check accepts", async () => {
    const example = await config(["example"]);
    expect(example.code).toBe(0);
    expect(example.stderr).toBe("");
    expect(example.stdout).toMatch(/^# sandpool gateway configuration/);
    expect(example.stdout).toContain("#   SANDPOOL_JWKS_URL ");

    const check = await config(["check", "--config", await file("example.yaml", example.stdout)]);
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);
    const effective = parse(check.stdout);
    expect(effective.auth.jwksUrl).toBe("https://issuer.example/.well-known/jwks.json");
    expect(effective.port).toBe(8080);
    expect(effective.runtime).toEqual({ kind: "docker" });
  });
});

const valid = `
auth:
  jwtSecret: ${SECRET}
policy:
  allowedImages: [img/a]
  defaultImage: img/a
pools:
  - name: a
    image: img/a
port: 1234
`;

describe("sandpool config check", () => {
  it("prints the effective configuration, environment over the file, secrets redacted", async () => {
    const result = await config(["check", "--config", await file("valid.yaml", valid)], {
      SANDPOOL_PORT: "9000",
      DATABASE_URL: "postgres://sandpool:db-password@db:5432/sandpool",
      SANDPOOL_MIN_IDLE: "0",
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^# effective sandpool configuration \(file .*valid\.yaml; environment DATABASE_URL, SANDPOOL_PORT, SANDPOOL_MIN_IDLE\); secrets redacted\n/,
    );
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stdout).not.toContain("db-password");
    const effective = parse(result.stdout);
    expect(effective.port).toBe(9000);
    expect(effective.auth.jwtSecret).toBe("<redacted>");
    expect(effective.databaseUrl).toBe("postgres://sandpool:redacted@db:5432/sandpool");
    expect(effective.pools[0]).toMatchObject({ name: "a", minIdle: 0, maxTotal: 100 });
    expect(effective.policy.maxConcurrentSessions).toBe(100);
  });

  it("loads from the environment alone without --config", async () => {
    const result = await config(["check"], {
      SANDPOOL_JWKS_URL: "https://issuer.example/jwks",
      SANDPOOL_DEFAULT_IMAGE: "img/x",
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\(no file; environment SANDPOOL_JWKS_URL, SANDPOOL_DEFAULT_IMAGE\)/);
    expect(parse(result.stdout).pools).toEqual([
      expect.objectContaining({ name: "default", image: "img/x" }),
    ]);
  });

  it("lists every problem with its path and a did-you-mean, and exits with code 2", async () => {
    const broken = valid
      .replace("  defaultImage: img/a", "  defaultImage: img/a\n  maxConcurentSessions: 3")
      .replace("    image: img/a", "    image: img/a\n    minIdle: -1");
    const result = await config(["check", "--config", await file("broken.yaml", broken)], {
      SANDPOOL_MIN_IDEL: "1",
      SANDPOOL_PORT: "eighty",
    });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^invalid configuration \(.*broken\.yaml and environment\): 4 problems\n/);
    expect(result.stderr).toContain(
      "  - SANDPOOL_MIN_IDEL: unknown variable, did you mean 'SANDPOOL_MIN_IDLE'?\n",
    );
    expect(result.stderr).toContain("  - SANDPOOL_PORT: expected a whole number, got 'eighty'\n");
    expect(result.stderr).toContain(
      "  - policy.maxConcurentSessions: unknown key, did you mean 'maxConcurrentSessions'?\n",
    );
    expect(result.stderr).toMatch(/ {2}- pools\[0\]\.minIdle: Too small: expected number to be >=0\n/);
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/); // a list of problems, not a stack trace
  });

  it("exits with code 2 when the file cannot be read", async () => {
    const missing = path.join(scratch, "missing.yaml");
    const result = await config(["check", "--config", missing]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${missing}: cannot be read (ENOENT)`);
  });
});

describe("sandpool config --json", () => {
  it("check prints the effective configuration as an object, secrets redacted", async () => {
    const result = await config(["check", "--config", await file("json.yaml", valid), "--json"], {
      SANDPOOL_PORT: "9001",
      SANDPOOL_POOL_DEMAND: "false",
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer).toMatchObject({
      ok: true,
      file: expect.stringMatching(/json\.yaml$/),
      environment: ["SANDPOOL_PORT", "SANDPOOL_POOL_DEMAND"],
    });
    expect(answer.config.port).toBe(9001);
    expect(answer.config.pools[0]).toMatchObject({ name: "a", demand: false });
    expect(answer.config.auth.jwtSecret).toBe("<redacted>");
    expect(result.stdout).not.toContain(SECRET);
  });

  it("check lists the problems as an object too, with their lines on stderr and exit code 2", async () => {
    const broken = valid.replace("    image: img/a", "    image: img/a\n    minIdel: 1");
    const result = await config(["check", "--config", await file("json-broken.yaml", broken), "--json"], {
      SANDPOOL_MAX_WARMUP_STARTS: "many",
    });
    expect(result.code).toBe(2);
    const answer = JSON.parse(result.stdout);
    expect(answer.ok).toBe(false);
    expect(answer.problems).toEqual(
      expect.arrayContaining([
        "SANDPOOL_MAX_WARMUP_STARTS: expected a whole number, got 'many'",
        expect.stringMatching(/^pools\[0\]\.minIdel: unknown key, did you mean 'minIdle'\?$/),
      ]),
    );
    expect(result.stderr).toMatch(/^invalid configuration \(/);
  });

  it("example prints the example file, its settings and the environment variables", async () => {
    const result = await config(["example", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as {
      yaml: string;
      config: Record<string, unknown>;
      environment: { name: string; path: string }[];
    };
    expect(answer.yaml).toBe((await config(["example"])).stdout);
    expect(answer.config).toEqual(parse(answer.yaml));
    expect(answer.environment.map((variable) => variable.name)).toEqual(
      configEnvVariables.map((variable) => variable.name),
    );
    expect(answer.environment).toContainEqual(
      expect.objectContaining({ name: "SANDPOOL_MAX_WARMUP_STARTS", path: "limits.maxWarmupStarts" }),
    );
  });
});
