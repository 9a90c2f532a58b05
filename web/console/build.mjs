#!/usr/bin/env node
/**
 * Builds the operator console (docs/console.md) into static files the gateway serves at
 * /console (src/console/console-assets.ts): the page, one script bundled by esbuild from
 * src/main.ts (uPlot and the generated admin client included: nothing is loaded from anywhere
 * else), and the styles. `npm run build` runs it with `--outdir dist/console-assets`.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf("--outdir");
const outdir = path.resolve(at === -1 ? path.join(here, "../../dist/console-assets") : args[at + 1]);
mkdirSync(outdir, { recursive: true });

await build({
  entryPoints: [path.join(here, "src/main.ts")],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "eof",
  outfile: path.join(outdir, "app.js"),
  logLevel: "warning",
});
for (const file of ["index.html", "favicon.svg"])
  copyFileSync(path.join(here, file), path.join(outdir, file));
// The chart library's styles first, the console's after them (its own rules win).
const uplotCss = readFileSync(fileURLToPath(import.meta.resolve("uplot/dist/uPlot.min.css")), "utf8");
writeFileSync(
  path.join(outdir, "app.css"),
  `${uplotCss}\n${readFileSync(path.join(here, "app.css"), "utf8")}`,
);
