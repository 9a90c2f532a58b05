/**
 * ListFiles, GetFile and PutFile, once the pipeline has admitted them (the session resolved
 * and marked busy in one store round trip; PutFile's size cap checked on Content-Length
 * before anything is read, src/operations/contract-operations.ts). Bodies stream both ways: a
 * download is never held in the gateway's memory, and neither is an upload; the cap is
 * handed to the sandbox, which enforces it exactly while it writes. A transfer keeps its
 * session busy until its last byte, so a slow one is never reaped as idle. Each call ends
 * without holding its answer (`endBehind`). Downloads are always attachments, never sniffed
 * (`downloadHeaders`).
 */
import { auditRefusal } from "../audit/audit-refusal.js";
import { scopedPrincipal } from "../auth/principal.js";
import { attachmentDisposition, fileNameOf } from "../contract/content-disposition.js";
import { SandpoolError } from "../contract/error-codes.js";
import { MAX_FILE_BYTES_HEADER } from "../contract/headers.js";
import type { PendingWork } from "../deferred/pending-work.js";
import type { ForwardLimits, SandboxAnswer, SandboxForwarder } from "../forward/sandbox-forwarder.js";
import type { UsageSink } from "../metering/usage-sink.js";
import { contractOperations } from "../operations/contract-operations.js";
import type { CallContext, OperationHandlers } from "../operations/handler.js";
import type { CallUsage, OpenCall } from "../operations/resolved-session.js";
import { TRANSFER_DEADLINE_MS } from "../operations/session-plan.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { answerOutcome } from "./answer-outcome.js";

/** What the file calls need: forwarding, the usage sink, and the pending work their ends join. */
export type FileDeps = {
  forwarder: SandboxForwarder;
  /** The deadline of a file call, which runs no user code. */
  limits: Pick<ForwardLimits, "sandboxRequestTimeoutMs">;
  usage: UsageSink;
  pending: PendingWork;
};

/** The query sent on to the sandbox: the call's query arguments (each a string as it came), as a query string. */
function queryOf(args: { query: Readonly<Record<string, unknown>> }): string {
  const sent = Object.entries(args.query).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string",
  );
  return new URLSearchParams(sent).toString();
}

/** Calls `done` once the answer's body has been sent (or abandoned), or now if it is bytes. */
function afterBody(answer: SandboxAnswer, done: () => void): SandboxAnswer {
  if (Buffer.isBuffer(answer.body)) {
    done();
  } else {
    answer.body.once("close", done);
  }
  return answer;
}

/** A media type and its parameters, nothing a browser could read otherwise. */
const MEDIA_TYPE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;

/**
 * What a download answers with is the gateway's decision, not the sandbox's: never sniffed,
 * always an attachment named after the requested path, so a browser opening a GetFile URL
 * saves an `.html` or `.svg` instead of running it. A type the sandbox names is kept only
 * when it is a plain media type.
 */
function downloadHeaders(answer: SandboxAnswer, path: string | undefined): void {
  answer.headers["x-content-type-options"] = "nosniff";
  if (answer.status !== 200) return;
  answer.headers["content-disposition"] = attachmentDisposition(fileNameOf(path));
  const type = answer.headers["content-type"];
  if (type === undefined || !MEDIA_TYPE.test(type))
    answer.headers["content-type"] = "application/octet-stream";
}

/** The bytes an upload stored, as the sandbox's answer says (0 when it does not). */
function storedBytes(answer: SandboxAnswer): number {
  try {
    const stored = JSON.parse((answer.body as Buffer).toString("utf8")) as { size_bytes?: unknown };
    return typeof stored.size_bytes === "number" ? stored.size_bytes : 0;
  } catch {
    return 0;
  }
}

function admitted(call: CallContext): OpenCall {
  return call.session!.call!;
}

/**
 * Ends a file call without holding its answer: the end is queued for the store before the
 * answer is written (the replica's next command for the session goes behind it), and the
 * gateway's close waits for it.
 */
function endBehind(services: FileDeps, call: OpenCall, usage?: CallUsage): void {
  services.pending.track(call.end(undefined, usage));
}

/**
 * An upload the sandbox refused as over the workspace's cap (one whose size no Content-Length
 * declared, or declared within the multipart framing allowance) is the same refusal as the one
 * the gateway makes on Content-Length: audited as `denied` (src/audit/record-refusal.ts).
 */
function auditSandboxRefusal(services: FileDeps, call: CallContext, answer: SandboxAnswer): void {
  const principal = scopedPrincipal(call.caller);
  if (principal === undefined || !Buffer.isBuffer(answer.body)) return;
  let detail: { code?: unknown; message?: unknown } | undefined;
  try {
    detail = (JSON.parse(answer.body.toString("utf8")) as { detail?: typeof detail }).detail;
  } catch {
    return;
  }
  if (detail?.code !== "file.too_large") return;
  const message = typeof detail.message === "string" ? detail.message : "the file is larger than the cap";
  auditRefusal(
    services.usage,
    call.log,
    { principal, operationId: call.operation.id, sessionId: call.session?.key.sessionId },
    new SandpoolError("file.too_large", message),
  );
}

export function fileHandlers(services: FileDeps): OperationHandlers {
  const timeoutMs = services.limits.sandboxRequestTimeoutMs;
  return handlersFor(contractOperations, {
    "files.list": async (operationCall) => {
      const call = admitted(operationCall);
      try {
        const answer = await services.forwarder.forward(call.lease, {
          method: "GET",
          subPath: "/files/list",
          query: queryOf(operationCall.args),
          timeoutMs,
          log: operationCall.log,
        });
        return answerOutcome(answer);
      } finally {
        endBehind(services, call);
      }
    },

    "files.get": async (operationCall) => {
      const call = admitted(operationCall);
      let usage: CallUsage | undefined;
      const end = () => endBehind(services, call, usage);
      let answer: SandboxAnswer;
      try {
        answer = await services.forwarder.forward(call.lease, {
          method: "GET",
          subPath: "/files",
          query: queryOf(operationCall.args),
          timeoutMs,
          log: operationCall.log,
        });
      } catch (error) {
        end();
        throw error;
      }
      downloadHeaders(answer, operationCall.args.query.path);
      // Recorded with the call's end, once the body has gone.
      if (answer.status === 200) {
        usage = { kind: "file_out", quantity: Number(answer.headers["content-length"] ?? 0) };
      }
      return answerOutcome(afterBody(answer, end));
    },

    "files.put": async (operationCall) => {
      const call = admitted(operationCall);
      const { policy } = operationCall.session!;
      const upload = operationCall.args.stream;
      const headers: Record<string, string> = {
        "content-type": upload.contentType,
        [MAX_FILE_BYTES_HEADER]: String(policy!.maxFileBytes),
      };
      if (upload.contentLength !== undefined) headers["content-length"] = String(upload.contentLength);
      let answer: SandboxAnswer;
      try {
        answer = await services.forwarder.forward(call.lease, {
          method: "POST",
          subPath: "/files",
          headers,
          body: upload.body,
          // The upload streams through before the sandbox answers: allow for a slow sender.
          timeoutMs: TRANSFER_DEADLINE_MS,
          log: operationCall.log,
          buffer: true,
        });
      } catch (error) {
        endBehind(services, call);
        throw error;
      }
      let usage: CallUsage | undefined;
      try {
        if (answer.status === 413) auditSandboxRefusal(services, operationCall, answer);
        if (answer.status === 201) usage = { kind: "file_in", quantity: storedBytes(answer) };
      } finally {
        // Recorded with the call's end.
        endBehind(services, call, usage);
      }
      return answerOutcome(answer);
    },
  });
}
