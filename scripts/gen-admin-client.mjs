/**
 * Regenerates src/cli/generated/admin-api.ts from the built CLI's `sandpool openapi --admin`
 * (`npm run gen:admin-client` builds first). Run after changing an admin operation.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { ADMIN_API_FILE, adminClientSource } from "./admin-client-source.mjs";

const document = JSON.parse(
  execFileSync(process.execPath, ["dist/cli/main.js", "openapi", "--admin"], { encoding: "utf8" }),
);
writeFileSync(ADMIN_API_FILE, await adminClientSource(document));
process.stdout.write(`wrote ${ADMIN_API_FILE}\n`);
