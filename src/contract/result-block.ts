/** Builds the Execute response envelope exactly as contract v1 shapes it. */
import { randomBytes } from "node:crypto";
import {
  type ExecResponse,
  type ExecutionOutcome,
  type OutputFileBlock,
  resultBlockType,
  type ToolKind,
} from "./schemas.js";

export function generateToolUseId(): string {
  return `srvtoolu_${randomBytes(12).toString("hex")}`;
}

export function execResponse(
  tool: ToolKind,
  toolUseId: string,
  outcome: ExecutionOutcome,
  executionTimeMs: number,
  files: OutputFileBlock[] = [],
): ExecResponse {
  return {
    tool_use_id: toolUseId,
    execution_time_ms: Math.max(0, Math.round(executionTimeMs)),
    result_block: {
      type: resultBlockType[tool],
      tool_use_id: toolUseId,
      // Always the success payload: a failed program is reported through return_code
      // and stderr, never through the error variant (contract v1 forbids it).
      content: {
        type: "code_execution_result",
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        return_code: outcome.return_code,
        content: files,
      },
    },
  };
}
