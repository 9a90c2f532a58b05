/** `sandpool serve`: production mode. */
import { Command } from "commander";

export function serveCommand(): Command {
  return new Command("serve")
    .summary("run the gateway with Postgres, Redis, BullMQ and Docker")
    .description(
      "Run the gateway with its production backends: Postgres (DATABASE_URL), Redis (REDIS_URL;\n" +
        "or through Sentinel, SANDPOOL_REDIS_SENTINELS; or a Cluster, SANDPOOL_REDIS_CLUSTER_NODES),\n" +
        "BullMQ jobs and the docker runtime (DOCKER_HOST). Refuses to start, naming what is missing,\n" +
        "and refuses the process runtime and tokens without an audience check (auth.audience, or\n" +
        "auth.anyAudience: true).\n" +
        "Configuration: a YAML file (--config) and environment variables, the environment winning;\n" +
        "`sandpool config example` prints a complete commented file.",
    )
    .option("--config <file>", "YAML configuration file")
    .option(
      "--role <role>",
      "all (one host, the default), edge (stateless front) or node (one per sandbox host); wins over SANDPOOL_ROLE",
    )
    .option("--migrate", "apply pending database migrations before serving (else: refuse an old schema)")
    .option("--json", 'once listening, print one JSON line ({"url", "adminUrl"}) instead of the text')
    .addHelpText(
      "after",
      "\nExample:\n  DATABASE_URL=postgres://... REDIS_URL=redis://... SANDPOOL_JWKS_URL=https://.../jwks.json \\\n" +
        "    SANDPOOL_JWT_AUDIENCE=sandpool \\\n" +
        "    sandpool serve --config sandpool.yaml\n",
    )
    .action(async (options: { config?: string; migrate?: boolean; json?: boolean; role?: string }) => {
      const { runServe } = await import("../run-serve.js");
      await runServe(options);
    });
}
