/**
 * The `text_editor_code_execution` tool: Anthropic's text-editor commands (view, create,
 * str_replace, insert, undo_edit) over one session's workspace. The contract reports failure
 * in the payload, so every user mistake, a path escape included, comes back as return code 1
 * with the reason on stderr; only a bug in this code escapes as an exception.
 */
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { SandpoolError } from "../../contract/error-codes.js";
import type { ExecutionOutcome, TextEditorInput } from "../../contract/schemas.js";
import { type ConfinedPath, confinePath } from "../files/confine-path.js";
import { capText, MARKER_ROOM_BYTES, truncationMarker } from "./capped-output.js";
import { listTree, readText, writeAtomic } from "./text-editor-disk.js";
import {
  countNewlines,
  EditorError,
  joinLines,
  lineAt,
  numberedWithin,
  occurrences,
  selectRange,
  snippetAround,
  splitLines,
} from "./text-editor-format.js";

const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Per stream, marker included, when the caller names no cap (the server passes its own). */
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

export interface EditorLimits {
  /** Most bytes of stdout, and of stderr, one call answers: the same cap as a program's output. */
  maxOutputBytes: number;
}
/** Undo depth per file: bounds the memory a model looping on edits of a large file can pin. */
const MAX_UNDO_STEPS = 20;

export class TextEditor {
  private readonly maxFileBytes: number;
  /** Per file (by resolved absolute path), the contents before each edit, oldest first. */
  private readonly history = new Map<string, string[]>();
  /** Calls run one at a time, so two edits of one file cannot interleave their read and write. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly workspaceReal: string,
    options: { maxFileBytes?: number } = {},
  ) {
    this.maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  run(input: TextEditorInput, limits?: EditorLimits): Promise<ExecutionOutcome> {
    const cap = limits?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const outcome = this.queue.then(() => this.attempt(input, cap));
    this.queue = outcome.catch(() => undefined);
    return outcome;
  }

  /**
   * Every answer is capped, not only `view`'s: a message can echo a path or an `old_str` as
   * large as the request body, and a directory listing can hold long names.
   */
  private async attempt(input: TextEditorInput, cap: number): Promise<ExecutionOutcome> {
    try {
      return { stdout: capText(await this.dispatch(input, cap), cap), stderr: "", return_code: 0 };
    } catch (error) {
      const message = userMessage(error, input);
      if (message === undefined) throw error;
      return { stdout: "", stderr: capText(`${message}\n`, cap), return_code: 1 };
    }
  }

  private async dispatch(input: TextEditorInput, cap: number): Promise<string> {
    const target = await this.resolve(input.path);
    switch (input.command) {
      case "view":
        return this.view(target, input.view_range, cap);
      case "create":
        return this.create(target, input.file_text);
      case "str_replace":
        return this.replace(target, input.old_str, input.new_str ?? "");
      case "insert":
        return this.insert(target, input.insert_line, input.new_str);
      case "undo_edit":
        return this.undo(target);
      default:
        throw new EditorError(`Unknown command \`${(input as { command: unknown }).command}\`.`);
    }
  }

  /** Models often echo an absolute path seen in a listing or a traceback: accept it inside the workspace. */
  private resolve(requested: string): Promise<ConfinedPath> {
    const root = this.workspaceReal;
    let relative = requested;
    if (requested === root) relative = ".";
    else if (requested.startsWith(`${root}/`)) relative = requested.slice(root.length + 1);
    return confinePath(root, relative);
  }

  private async view(
    target: ConfinedPath,
    range: readonly number[] | null | undefined,
    cap: number,
  ): Promise<string> {
    mustExist(target);
    if ((await stat(target.absolute)).isDirectory()) {
      if (range)
        throw new EditorError("The `view_range` parameter is not allowed when `path` points to a directory.");
      const entries = await listTree(target.absolute, target.relative);
      const header = `Here's the files and directories up to 2 levels deep in ${target.relative}, excluding hidden items:`;
      return [header, ...entries].map((line) => `${line}\n`).join("");
    }
    const lines = splitLines(await readText(target.absolute, target.relative, this.maxFileBytes));
    const { first, selected } = range ? selectRange(lines, range) : { first: 1, selected: lines };
    const shown = numberedWithin(selected, first, Math.max(0, cap - MARKER_ROOM_BYTES));
    if (shown.firstOmittedLine === undefined) return shown.text;
    const last = first + selected.length - 1;
    const hint = `view_range [${shown.firstOmittedLine}, ${last}] shows the rest`;
    return `${shown.text}${truncationMarker(shown.omittedBytes, hint)}`;
  }

  private async create(target: ConfinedPath, fileText: string): Promise<string> {
    if (target.exists) {
      throw new EditorError(
        `File already exists at: ${target.relative}. Cannot overwrite files using command \`create\`.`,
      );
    }
    this.checkSize(target, fileText);
    await mkdir(path.dirname(target.absolute), { recursive: true });
    await writeAtomic(target.absolute, fileText);
    // A history left from a file once at this path (since deleted) is not this file's.
    this.history.delete(target.absolute);
    return `File created successfully at: ${target.relative}\n`;
  }

  private async replace(target: ConfinedPath, oldStr: string, newStr: string): Promise<string> {
    const text = await this.readEditable(target);
    const found = occurrences(text, oldStr);
    if (found.length === 0) {
      throw new EditorError(
        `No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${target.relative}.`,
      );
    }
    if (found.length > 1) {
      const lines = [...new Set(found.map((offset) => lineAt(text, offset)))];
      throw new EditorError(
        `No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines ${lines.join(", ")}. Please ensure it is unique.`,
      );
    }
    const offset = found[0]!;
    // Sliced, not String.replace: a "$&" or "$1" in new_str must land verbatim.
    const updated = text.slice(0, offset) + newStr + text.slice(offset + oldStr.length);
    await this.save(target, text, updated);
    const first = lineAt(updated, offset);
    return edited(target, splitLines(updated), first, first + countNewlines(newStr));
  }

  private async insert(target: ConfinedPath, insertLine: number, newStr: string): Promise<string> {
    const text = await this.readEditable(target);
    const lines = splitLines(text);
    if (!Number.isInteger(insertLine) || insertLine < 0 || insertLine > lines.length) {
      throw new EditorError(
        `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of lines of the file: [0, ${lines.length}].`,
      );
    }
    // new_str is whole lines: its own final "\n" ends its last line, it adds no empty one.
    const inserted = newStr === "" ? [""] : splitLines(newStr);
    const updatedLines = [...lines.slice(0, insertLine), ...inserted, ...lines.slice(insertLine)];
    const updated = joinLines(updatedLines, text === "" || text.endsWith("\n"));
    await this.save(target, text, updated);
    return edited(target, updatedLines, insertLine + 1, insertLine + inserted.length);
  }

  private async undo(target: ConfinedPath): Promise<string> {
    const steps = this.history.get(target.absolute);
    const previous = steps?.at(-1);
    if (steps === undefined || previous === undefined) {
      throw new EditorError(`No edit history found for ${target.relative}.`);
    }
    await writeAtomic(target.absolute, previous);
    // Popped only once written, so a failed undo can be retried.
    steps.pop();
    if (steps.length === 0) this.history.delete(target.absolute);
    return `Last edit to ${target.relative} undone successfully.\n`;
  }

  private async readEditable(target: ConfinedPath): Promise<string> {
    mustExist(target);
    return readText(target.absolute, target.relative, this.maxFileBytes);
  }

  private async save(target: ConfinedPath, before: string, after: string): Promise<void> {
    this.checkSize(target, after);
    await writeAtomic(target.absolute, after);
    const steps = this.history.get(target.absolute) ?? [];
    steps.push(before);
    if (steps.length > MAX_UNDO_STEPS) steps.shift();
    this.history.set(target.absolute, steps);
  }

  private checkSize(target: ConfinedPath, text: string): void {
    const bytes = Buffer.byteLength(text);
    if (bytes > this.maxFileBytes) {
      throw new EditorError(
        `Refusing to write ${target.relative}: it would be ${bytes} bytes, above the editor's limit of ${this.maxFileBytes} bytes.`,
      );
    }
  }
}

function mustExist(target: ConfinedPath): void {
  if (!target.exists)
    throw new EditorError(`The path ${target.relative} does not exist. Please provide a valid path.`);
}

function edited(target: ConfinedPath, lines: string[], first: number, last: number): string {
  return (
    `The file ${target.relative} has been edited. Here's the result of running \`cat -n\` on a snippet of ${target.relative}:\n` +
    snippetAround(lines, first, last) +
    "Review the changes and make sure they are as expected. Edit the file again if necessary.\n"
  );
}

/**
 * The stderr text for an expected failure, or undefined for a bug. A filesystem error is the
 * user's (their code can make any path unreadable); its Node message is not shown because it
 * names the server-side workspace path.
 */
function userMessage(error: unknown, input: TextEditorInput): string | undefined {
  if (error instanceof EditorError || error instanceof SandpoolError) return error.message;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === "string" && code.startsWith("E")) {
    return `Could not run \`${input.command}\` on ${input.path}: ${code}${describe(code)}.`;
  }
  return undefined;
}

const ERRNO_TEXT: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "a parent of the path is not a directory",
  EISDIR: "the path is a directory",
  ENOENT: "no such file or directory",
  ENOSPC: "no space left on device",
  ENAMETOOLONG: "name too long",
};

function describe(code: string): string {
  const text = ERRNO_TEXT[code];
  return text === undefined ? "" : ` (${text})`;
}
