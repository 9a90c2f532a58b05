#!/usr/bin/env node
// Bundles the standalone sandbox server (src/cli/sandbox-main.ts) and all its
// npm dependencies into one ESM file, so the sandbox image needs only the
// node binary and this file: no node_modules, no npm inside the image.
//
// Usage: node deploy/sandbox/bundle.mjs [--entry FILE] [--outfile FILE]
//   --entry    entry point (default: src/cli/sandbox-main.ts)
//   --outfile  output file (default: deploy/sandbox/.build/sandbox.mjs)
// Relative paths are taken from the repository root.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const usage = `Usage: node deploy/sandbox/bundle.mjs [--entry FILE] [--outfile FILE]
  --entry    entry point (default: src/cli/sandbox-main.ts)
  --outfile  output file (default: deploy/sandbox/.build/sandbox.mjs)`;

let args;
try {
  args = parseArgs({
    options: {
      entry: { type: "string", default: "src/cli/sandbox-main.ts" },
      outfile: { type: "string", default: "deploy/sandbox/.build/sandbox.mjs" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  }).values;
} catch (err) {
  console.error(`bundle: ${err.message}\n${usage}`);
  process.exit(2);
}
if (args.help) {
  console.log(usage);
  process.exit(0);
}

/**
 * A JSON file a dependency requires (mime-db's database, a quarter of the bundle) goes in as
 * one string given to JSON.parse, not as an object literal: V8 scans a string literal at
 * every sandbox's start much faster than it pre-parses 150 KiB of object literal (about
 * 10 ms of CPU here), and JSON.parse runs only if the module is loaded (the first file
 * operation).
 */
const jsonAsString = {
  name: "json-as-string",
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /node_modules[\\/].*\.json$/ }, (loaded) => {
      const text = JSON.stringify(JSON.parse(readFileSync(loaded.path, "utf8")));
      return { contents: `module.exports = JSON.parse(${JSON.stringify(text)});`, loader: "js" };
    });
  },
};

const entry = path.resolve(repoRoot, args.entry);
const outfile = path.resolve(repoRoot, args.outfile);
if (!existsSync(entry)) {
  console.error(`bundle: error: entry point ${path.relative(process.cwd(), entry)} does not exist`);
  process.exit(1);
}

try {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Whitespace and syntax only: a smaller file parses faster at every sandbox start, and
    // identifiers stay, so stack traces from inside a sandbox still read.
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: false,
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
    // CommonJS dependencies call require() for node built-ins; an ESM bundle
    // has no require, so give it one.
    banner: {
      js: 'import { createRequire } from "module"; const require = createRequire(import.meta.url);',
    },
    absWorkingDir: repoRoot,
    // Lets an entry outside the tree (a test stub) still use the repo's deps.
    nodePaths: [path.join(repoRoot, "node_modules")],
    plugins: [jsonAsString],
  });
  if (result.errors.length > 0) process.exit(1);
} catch {
  // esbuild has already printed the errors.
  console.error("bundle: error: esbuild failed");
  process.exit(1);
}

const bytes = readFileSync(outfile);
const sha256 = createHash("sha256").update(bytes).digest("hex");
console.log(
  `bundle: wrote ${path.relative(process.cwd(), outfile)} (${(bytes.length / 1024).toFixed(0)} KiB, sha256 ${sha256.slice(0, 12)})`,
);
