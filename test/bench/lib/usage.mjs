/**
 * A bench's command line: `--help` (or `-h`) prints the script's own doc comment (its first
 * block comment, which says what it measures and how to run it) and exits; with `known`
 * (the flags of a bench that reads no values), anything else is refused with a pointer to
 * `--help` rather than ignored. Benches that take values parse them with util.parseArgs,
 * which refuses unknown options itself.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function handleUsage(scriptUrl, known) {
  const args = process.argv.slice(2);
  const script = fileURLToPath(scriptUrl);
  if (args.includes("--help") || args.includes("-h")) {
    const doc = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(script, "utf8"))?.[1] ?? "";
    console.log(
      doc
        .split("\n")
        .map((line) => line.replace(/^\s*\* ?/, ""))
        .join("\n")
        .trim(),
    );
    process.exit(0);
  }
  const unknown = known === undefined ? [] : args.filter((arg) => !known.includes(arg));
  if (unknown.length > 0) {
    console.error(`unknown argument ${unknown.join(" ")}: see node ${script} --help`);
    process.exit(2);
  }
}
