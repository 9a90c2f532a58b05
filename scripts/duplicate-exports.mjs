#!/usr/bin/env node
/**
 * Exported names defined in more than one file of src/ (issue 44: one source for each fact).
 * Two definitions under one name drift apart, or mean two things a reader takes for one.
 * Prints each such name with its files; `--max <n>` exits 1 when there are more than n (the
 * ceiling `npm run lint` holds to, which only goes down).
 * Re-exports (`export { x } from`, `export type { x }`) are not definitions and not counted.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const maxAt = args.indexOf("--max");
const max = maxAt === -1 ? undefined : Number(args[maxAt + 1]);
const GENERATED = ["src/cli/generated/"];
const DEFINITION =
  /^export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:const|let|var|function\*?|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;

function sourceFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(relative));
    else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) found.push(relative);
  }
  return found;
}

const definedIn = new Map();
for (const file of sourceFiles("src")) {
  if (GENERATED.some((prefix) => file.startsWith(prefix))) continue;
  for (const match of readFileSync(file, "utf8").matchAll(DEFINITION)) {
    const files = definedIn.get(match[1]) ?? new Set();
    files.add(file);
    definedIn.set(match[1], files);
  }
}
const twice = [...definedIn].filter(([, files]) => files.size > 1).sort(([a], [b]) => a.localeCompare(b));
const over = max !== undefined && twice.length > max;
// With a ceiling, the names are listed only when it is passed (npm run lint stays quiet).
if (max === undefined || over)
  for (const [name, files] of twice) console.log(`${name}: ${[...files].join(", ")}`);
console.log(
  `exported names defined in more than one file: ${twice.length}${max === undefined ? "" : ` (at most ${max})`}`,
);
if (over) process.exit(1);
