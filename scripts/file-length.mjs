#!/usr/bin/env node
/**
 * No hand-written source file over 450 lines (issue 44): a file that long does more than one
 * job. `npm run lint` runs this; it exits 1 naming each file of src/ over the limit that is
 * not on the allow-list below. Generated code (src/cli/generated) is exempt.
 *
 * The allow-list names files known to be too long and still to split; it only shrinks. A
 * listed file that is now short enough is reported too, so its entry is removed.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export const MAX_LINES = 450;
const GENERATED = ["src/cli/generated/"];
/** Files known to be too long, still to split: none now; a new entry needs a reason. */
export const TO_SPLIT = new Set([]);

/** Every .ts/.mts/.mjs file under `dir`, as a path relative to the repository root. */
function sourceFiles(root, dir) {
  const found = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(root, relative));
    else if (/\.(ts|mts|mjs)$/.test(entry.name)) found.push(relative);
  }
  return found;
}

/** The files over the limit that are not allowed to be, and allowed ones that no longer are. */
export function fileLengthReport(root) {
  const tooLong = [];
  const shortNow = [];
  for (const file of sourceFiles(root, "src")) {
    if (GENERATED.some((prefix) => file.startsWith(prefix))) continue;
    const lines = readFileSync(path.join(root, file), "utf8").split("\n").length - 1;
    if (lines > MAX_LINES && !TO_SPLIT.has(file)) tooLong.push({ file, lines });
    if (lines <= MAX_LINES && TO_SPLIT.has(file)) shortNow.push({ file, lines });
  }
  return { tooLong, shortNow };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { tooLong, shortNow } = fileLengthReport(process.cwd());
  for (const { file, lines } of tooLong)
    console.error(`${file}: ${lines} lines (at most ${MAX_LINES}): split it`);
  for (const { file, lines } of shortNow) {
    console.error(`${file}: ${lines} lines: take it off the allow-list in scripts/file-length.mjs`);
  }
  if (tooLong.length + shortNow.length > 0) process.exit(1);
  console.log(
    `file length: every hand-written file of src/ has at most ${MAX_LINES} lines (${TO_SPLIT.size} to split)`,
  );
}
