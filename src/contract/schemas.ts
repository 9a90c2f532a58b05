/**
 * Contract v1 wire shapes as zod schemas: the one place request shapes are defined.
 * Objects are loose (`z.looseObject`) because the contract grows additively: unknown
 * fields are tolerated on the way in and passed through on the way out.
 *
 * Written with `zod/mini`: the sandbox server bundles these, and the full zod build
 * (over half a megabyte) cost every sandbox start tens of milliseconds to compile.
 */

import { en } from "zod/locales";
import * as z from "zod/mini";
import { unknownFieldMessage } from "./did-you-mean.js";

// zod/mini ships without messages ("Invalid input"); the English ones name the problem.
// Global to zod, and the same locale the full build installs for the rest of sandpool.
z.config(en());

const positiveInt = z.int().check(z.minimum(1));
const nonEmptyString = z.string().check(z.minLength(1));

export const createSessionRequest = z.looseObject({
  image: z.nullish(nonEmptyString),
  idle_timeout_seconds: z.nullish(positiveInt),
  max_lifetime_seconds: z.nullish(positiveInt),
});
export type CreateSessionRequest = z.infer<typeof createSessionRequest>;

export interface SessionHandle {
  session_id: string;
  idle_timeout_seconds: number;
  max_lifetime_seconds: number;
  created_at: number;
  last_activity_at: number;
  [extra: string]: unknown;
}

export const toolKinds = ["code_execution", "bash_code_execution", "text_editor_code_execution"] as const;
export type ToolKind = (typeof toolKinds)[number];

export function isToolKind(value: unknown): value is ToolKind {
  return typeof value === "string" && (toolKinds as readonly string[]).includes(value);
}

export const codeExecutionInput = z.looseObject({ code: nonEmptyString });
export const bashExecutionInput = z.looseObject({ command: nonEmptyString });

export const textEditorCommands = ["view", "create", "str_replace", "insert", "undo_edit"] as const;
export type TextEditorCommand = (typeof textEditorCommands)[number];

const path = nonEmptyString;
const optionalString = z.nullish(z.string());

/** Command-specific fields are validated per command, as the contract requires. */
export const textEditorInput = z.discriminatedUnion("command", [
  z.looseObject({
    command: z.literal("view"),
    path,
    view_range: z.nullish(z.tuple([z.int(), z.int()])),
  }),
  z.looseObject({ command: z.literal("create"), path, file_text: z.string() }),
  z.looseObject({
    command: z.literal("str_replace"),
    path,
    old_str: nonEmptyString,
    new_str: optionalString,
  }),
  z.looseObject({
    command: z.literal("insert"),
    path,
    insert_line: z.int().check(z.minimum(0)),
    new_str: z.string(),
  }),
  z.looseObject({ command: z.literal("undo_edit"), path }),
]);
export type TextEditorInput = z.infer<typeof textEditorInput>;

const execCommon = {
  timeout_seconds: z.nullish(positiveInt),
  tool_use_id: z.nullish(z.string()),
};

export const execRequest = z.discriminatedUnion("tool", [
  z.looseObject({ tool: z.literal("code_execution"), input: codeExecutionInput, ...execCommon }),
  z.looseObject({ tool: z.literal("bash_code_execution"), input: bashExecutionInput, ...execCommon }),
  z.looseObject({ tool: z.literal("text_editor_code_execution"), input: textEditorInput, ...execCommon }),
]);
export type ExecRequest = z.infer<typeof execRequest>;

export const resultBlockType: Record<ToolKind, string> = {
  code_execution: "code_execution_tool_result",
  bash_code_execution: "bash_code_execution_tool_result",
  text_editor_code_execution: "text_editor_code_execution_tool_result",
};

export interface ExecutionOutcome {
  stdout: string;
  stderr: string;
  return_code: number;
}

/** A file an execution created or changed; `file_id` is its workspace-relative path (GetFile `?path=`). */
export interface OutputFileBlock {
  type: "code_execution_output";
  file_id: string;
  filename: string;
}

export interface ExecResponse {
  tool_use_id: string;
  execution_time_ms: number;
  result_block: {
    type: string;
    tool_use_id: string;
    content: {
      type: "code_execution_result";
      stdout: string;
      stderr: string;
      return_code: number;
      content: OutputFileBlock[];
    };
  };
}

export interface FileMetadata {
  path: string;
  size_bytes: number;
  mime_type: string | null;
  modified_at: number;
  [extra: string]: unknown;
}

export interface FileUploadResult {
  path: string;
  size_bytes: number;
}

/** The part of a zod error (full or mini build) that issueProblems reads. */
export interface SchemaIssues {
  issues: readonly {
    path: readonly PropertyKey[];
    message: string;
    code?: string;
    keys?: readonly string[];
  }[];
}

/**
 * A zod failure as one problem per issue: `input.code: Too small ...`, `timeout_seconds: ...`.
 * Given the schema, an unknown field of a strict object is one problem per field, naming the
 * fields the object takes (and the one most likely meant).
 */
export function issueProblems(error: SchemaIssues, schema?: z.core.$ZodType): string[] {
  const at = (path: readonly PropertyKey[]) => (path.length > 0 ? path.map(String).join(".") : "body");
  return error.issues.flatMap((issue) =>
    schema !== undefined && issue.code === "unrecognized_keys" && issue.keys !== undefined
      ? issue.keys.map(
          (key) => `${at([...issue.path, key])}: ${unknownFieldMessage(schema, issue.path, key)}`,
        )
      : [`${at(issue.path)}: ${issue.message}`],
  );
}
