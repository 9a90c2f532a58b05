/**
 * Execute: runs one tool call in a session, after every earlier call of that session, with
 * the timeout clamped to the server's ceiling, and wraps the outcome in the result envelope,
 * with the workspace files the call created or changed (workspace-snapshot.ts).
 */
import { performance } from "node:perf_hooks";
import { SandpoolError } from "../../contract/error-codes.js";
import { execResponse, generateToolUseId } from "../../contract/result-block.js";
import type { ExecRequest, ExecResponse, ExecutionOutcome } from "../../contract/schemas.js";
import { clampHint, type SandboxConfig } from "../config.js";
import { changedFiles, snapshotWorkspace } from "../files/workspace-snapshot.js";
import type { Session } from "../sessions/session.js";
import { runBash } from "./bash-runner.js";
import { capJsonCost, JSON_COST_FACTOR, type OutputListener } from "./capped-output.js";

export interface ExecuteHooks {
  /** Runs the tool's work: the registry's bracket, which reaps strays before and after it. */
  runTool?: <T>(work: () => Promise<T>) => Promise<T>;
  /** Hears the output as it happens, under the same caps (streamed Execute). */
  onOutput?: OutputListener;
}

const runDirectly = <T>(work: () => Promise<T>): Promise<T> => work();

export async function executeToolCall(
  session: Session,
  request: ExecRequest,
  config: SandboxConfig,
  hooks: ExecuteHooks = {},
): Promise<ExecResponse> {
  const timeoutSeconds = clampHint(
    request.timeout_seconds,
    config.defaultExecTimeoutSeconds,
    config.maxExecTimeoutSeconds,
  );
  const toolUseId = request.tool_use_id ?? generateToolUseId();
  const bracket = hooks.runTool ?? runDirectly;
  return session.serialize(async () => {
    if (session.destroyed) throw new SandpoolError("session.not_found", "no such session");
    // An earlier call may have deleted or replaced the workspace: back before this one runs.
    await session.ensureUsable();
    return bracket(async () => {
      const started = performance.now();
      const before = await snapshotWorkspace(session.workspace);
      const ran = await runTool(session, request, timeoutSeconds * 1000, config, hooks.onOutput);
      const outcome = boundJsonCost(ran, config);
      const files = changedFiles(before, await snapshotWorkspace(session.workspace));
      return execResponse(request.tool, toolUseId, outcome, performance.now() - started, files);
    });
  });
}

/** Each stream within JSON_COST_FACTOR x the output cap once JSON-escaped (capped-output.ts). */
function boundJsonCost(outcome: ExecutionOutcome, config: SandboxConfig): ExecutionOutcome {
  const maxCost = config.maxOutputBytes * JSON_COST_FACTOR;
  return {
    ...outcome,
    stdout: capJsonCost(outcome.stdout, maxCost),
    stderr: capJsonCost(outcome.stderr, maxCost),
  };
}

function runTool(
  session: Session,
  request: ExecRequest,
  timeoutMs: number,
  config: SandboxConfig,
  onOutput: OutputListener | undefined,
): Promise<ExecutionOutcome> {
  switch (request.tool) {
    case "code_execution":
      return session.interpreter.run(request.input.code, {
        timeoutMs,
        maxOutputBytes: config.maxOutputBytes,
        interruptGraceMs: config.interruptGraceMs,
        onOutput,
      });
    case "bash_code_execution":
      return runBash(request.input.command, {
        cwd: session.workspace,
        home: session.workspace,
        timeoutMs,
        maxOutputBytes: config.maxOutputBytes,
        killGraceMs: config.interruptGraceMs,
        launcher: session.launcher,
        onGroupStarted: (pgid) => session.trackProcessGroup(pgid),
        onOutput,
      });
    case "text_editor_code_execution":
      return session.editor.run(request.input, { maxOutputBytes: config.maxOutputBytes });
  }
}
