/**
 * An operator's CLI against a real gateway in this process (the test harness: process
 * runtime, memory store, PGlite), for the e2e suites of the admin commands: the gateway, an
 * admin token, and `sandpool(args, token?)` running the built CLI with `--url` and `--token`
 * and nothing leaking in from the environment. Registers its own beforeAll/afterAll.
 */
import { afterAll, beforeAll } from "vitest";
import { mintToken } from "../../src/auth/dev-keys.js";
import { type CliResult, requireBuiltCli, runCli } from "./cli.js";
import { type GatewayOverrides, startTestGateway, TEST_SECRET, type TestGateway } from "./gateway-harness.js";

/** Neither the test's environment nor a developer's shell leaks a URL or token in. */
export const HERMETIC_CLI_ENV = { SANDPOOL_URL: "", SANDPOOL_ADMIN_TOKEN: "" };

export interface AdminCliHarness {
  readonly harness: TestGateway;
  readonly adminToken: string;
  /** `sandpool <command...> <args> --url U --token T`, `stdin` written to its stdin. */
  sandpool(args: string[], token?: string, stdin?: string): Promise<CliResult>;
}

export function useAdminCliHarness(
  pools: GatewayOverrides["pools"],
  command: string[] = [],
  overrides: GatewayOverrides = {},
): AdminCliHarness {
  let harness: TestGateway | undefined;
  let adminToken = "";
  beforeAll(async () => {
    requireBuiltCli();
    harness = await startTestGateway({ ...overrides, pools });
    adminToken = await mintToken({
      secret: TEST_SECRET,
      admin: true,
      subject: "cli-operator",
      ttlSeconds: 600,
    });
  }, 60_000);
  afterAll(() => harness?.close());
  return {
    get harness() {
      if (!harness) throw new Error("the gateway starts in beforeAll");
      return harness;
    },
    get adminToken() {
      return adminToken;
    },
    sandpool(args, token = adminToken, stdin = undefined) {
      return runCli([...command, ...args, "--url", this.harness.url, "--token", token], {
        env: HERMETIC_CLI_ENV,
        timeoutMs: 30_000,
        ...(stdin === undefined ? {} : { stdin }),
      });
    },
  };
}
