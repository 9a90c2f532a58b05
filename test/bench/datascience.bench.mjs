/**
 * `npm run bench:datascience`: the per-image figures of lib/image-bench.mjs alone (cold start
 * of each sandbox image, warm lease, and the first `import pandas` of a fresh lease against a
 * cold interpreter), without the rest of bench:lease. Needs a Docker engine with the images
 * (`npm run build:sandbox-image`) and the build (`npm run build`).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { imagePresent, LEAN_IMAGE, measureImages, printImageReport } from "./lib/image-bench.mjs";
import { installCleanupHandlers, makeTempDir, removeTempDir, runBench } from "./lib/process.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url, []);

async function main() {
  installCleanupHandlers();
  const cliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  if (!imagePresent(LEAN_IMAGE))
    throw new Error(`no Docker engine with ${LEAN_IMAGE}: npm run build:sandbox-image`);
  const dataDir = await makeTempDir("sandpool-image-bench-");
  const result = await measureImages(dataDir);
  await removeTempDir(dataDir);
  printImageReport(result);
}

await runBench(main);
