/**
 * The text editor's pure text side: how a file splits into lines, how lines are shown
 * (`cat -n` style), where an edit lands, and the messages for a bad `view_range`. No disk access.
 */

/** A user mistake (bad path, bad range, no match): reported on stderr with return code 1, never thrown on. */
export class EditorError extends Error {}

/** Lines of context shown around an edit, as Anthropic's editor shows them. */
const SNIPPET_CONTEXT = 4;

/**
 * A file's lines. A final "\n" ends the last line rather than starting an empty one, so
 * "a\nb\n" has two lines, as `cat -n` counts them. A "\r" stays on its line, so CRLF files
 * round-trip unchanged.
 */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  return (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n");
}

export function joinLines(lines: string[], finalNewline: boolean): string {
  return lines.length === 0 ? "" : lines.join("\n") + (finalNewline ? "\n" : "");
}

/** `cat -n` output for `lines`, the first of which is line `firstNumber`. */
export function numbered(lines: string[], firstNumber: number): string {
  return lines.map((line, index) => `${(firstNumber + index).toString().padStart(6)}\t${line}\n`).join("");
}

/**
 * Like `numbered`, but stops before the text would pass `maxBytes` (UTF-8): the lines past
 * that point are counted (bytes, and the first one left out), never rendered, so viewing a
 * file of millions of short lines costs the cap, not the file times the line-number width.
 */
export function numberedWithin(
  lines: readonly string[],
  firstNumber: number,
  maxBytes: number,
): { text: string; omittedBytes: number; firstOmittedLine: number | undefined } {
  const kept: string[] = [];
  let used = 0;
  let index = 0;
  for (; index < lines.length; index++) {
    const line = `${(firstNumber + index).toString().padStart(6)}\t${lines[index]}\n`;
    const size = Buffer.byteLength(line);
    if (used + size > maxBytes) break;
    kept.push(line);
    used += size;
  }
  if (index === lines.length) return { text: kept.join(""), omittedBytes: 0, firstOmittedLine: undefined };
  let omittedBytes = 0;
  for (let rest = index; rest < lines.length; rest++) {
    const width = Math.max(6, String(firstNumber + rest).length);
    omittedBytes += width + 2 + Buffer.byteLength(lines[rest]!);
  }
  return { text: kept.join(""), omittedBytes, firstOmittedLine: firstNumber + index };
}

/** The 1-based line on which the character at `offset` sits. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (
    let index = text.indexOf("\n");
    index !== -1 && index < offset;
    index = text.indexOf("\n", index + 1)
  ) {
    line++;
  }
  return line;
}

export function countNewlines(text: string): number {
  return text.split("\n").length - 1;
}

/**
 * Every offset where `needle` starts, overlapping ones included: "aa" in "aaa" is ambiguous
 * (two places it could mean), so it must not count as a unique match.
 */
export function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + 1)) {
    found.push(index);
  }
  return found;
}

/** The `cat -n` lines around an edit that now spans lines `first`..`last` of `lines`. */
export function snippetAround(lines: string[], first: number, last: number): string {
  const start = Math.max(1, first - SNIPPET_CONTEXT);
  const end = Math.min(lines.length, last + SNIPPET_CONTEXT);
  return numbered(lines.slice(start - 1, end), start);
}

/**
 * The part of a file a `view_range` [start, end] selects: 1-based and inclusive, `end` -1
 * meaning the last line. Throws an EditorError naming the valid bounds otherwise.
 */
export function selectRange(
  lines: string[],
  range: readonly number[],
): { first: number; selected: string[] } {
  const [start, end] = range;
  const shown = `[${range.join(", ")}]`;
  if (range.length !== 2 || start === undefined || end === undefined) {
    throw new EditorError("Invalid `view_range`. It should be a list of two integers.");
  }
  if (start < 1 || start > lines.length) {
    throw new EditorError(
      `Invalid \`view_range\` ${shown}: its first element \`${start}\` should be within the range of lines of the file: [1, ${lines.length}].`,
    );
  }
  if (end !== -1 && end < start) {
    throw new EditorError(
      `Invalid \`view_range\` ${shown}: its second element \`${end}\` should be greater than or equal to its first element \`${start}\`, or -1 for the end of the file.`,
    );
  }
  if (end > lines.length) {
    throw new EditorError(
      `Invalid \`view_range\` ${shown}: its second element \`${end}\` should not exceed the number of lines in the file: ${lines.length}.`,
    );
  }
  return { first: start, selected: lines.slice(start - 1, end === -1 ? lines.length : end) };
}
