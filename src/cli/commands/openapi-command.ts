/**
 * `sandpool openapi`: prints the OpenAPI 3.1 document generated from the operation
 * registry, offline (no gateway, no configuration): what `GET /openapi.json` answers. The
 * public view by default (the contract and the open endpoints), every operation with
 * --admin (the view of an admin token). Exit codes: 0 printed, 1 the file cannot be
 * written, 2 bad usage.
 */
import { writeFile } from "node:fs/promises";
import { Command } from "commander";
import { examples, usageExits } from "../admin/admin-command-kit.js";

interface OpenApiOptions {
  admin?: boolean;
  output?: string;
}

export function openapiCommand(): Command {
  return usageExits(
    new Command("openapi")
      .summary("print the OpenAPI 3.1 document of the gateway (offline)")
      .description(
        "Print sandpool's OpenAPI 3.1 document as JSON, generated from its operation registry without a\n" +
          "running gateway: the same document `GET /openapi.json` answers. By default the public view: the\n" +
          "contract's operations (their paths and schemas exactly as in the contract) and the endpoints open\n" +
          "to anyone. With --admin, every operation, the admin API under /admin/v1 included.",
      )
      .option("--admin", "every operation: the view an admin token gets")
      .option("--output <file>", "write the document to <file> instead of standard output")
      .addHelpText(
        "after",
        examples(
          "sandpool openapi > sandpool-openapi.json",
          "sandpool openapi --admin --output admin-openapi.json",
          'curl -H "Authorization: Bearer $SANDPOOL_ADMIN_TOKEN" http://127.0.0.1:8080/openapi.json  # the same, served',
        ),
      )
      .action(async (options: OpenApiOptions) => {
        const { openApiDocument } = await import("../../discovery/openapi-document.js");
        const text = `${JSON.stringify(openApiDocument(options.admin ? "admin" : "public"), null, 2)}\n`;
        if (options.output === undefined) {
          process.stdout.write(text);
          return;
        }
        try {
          await writeFile(options.output, text);
        } catch (error) {
          process.stderr.write(
            `sandpool openapi: cannot write ${options.output}: ${(error as Error).message}\n`,
          );
          process.exitCode = 1;
        }
      }),
  );
}
