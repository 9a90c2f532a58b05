/**
 * The one enum of error codes sandpool and its sandbox server answer with, and the one
 * code -> HTTP status map. Every error body is `{"detail": {"code", "message"}}` (the
 * contract's `Error` schema leaves `detail` free-form; this is our shape of it).
 */
export const errorStatus = {
  "request.bad_target": 400,
  "request.malformed": 422,
  "request.bad_json": 400,
  "request.bad_content_type": 415,
  "request.too_large": 413,
  "request.not_found": 404,
  "request.method_not_allowed": 405,
  /** Too many requests in flight that have not passed authentication yet (health checks still pass). */
  "request.busy": 503,
  /** The Host header names no host this gateway answers for (DNS rebinding). */
  "request.host_denied": 403,
  /** An Origin header names an origin that may not call this gateway (a browser page elsewhere). */
  "request.origin_denied": 403,
  "tool.unknown": 400,
  "session.not_found": 404,
  /** The session has a call in flight: it cannot hibernate now. */
  "session.busy": 409,
  /** The session's pool cannot hibernate (egress pools, the process runtime). */
  "session.not_hibernatable": 409,
  /** A hibernated session could not be brought back; its checkpoint is kept: try again. */
  "session.resume_failed": 503,
  "file.not_found": 404,
  "file.is_directory": 400,
  "file.too_large": 413,
  "path.outside_workspace": 403,
  "path.invalid": 400,
  "auth.missing": 401,
  "auth.invalid": 401,
  /** A genuine token or API key past its expiry: get a new one (a forged one is `auth.invalid`). */
  "auth.expired": 401,
  "auth.rate_limited": 429,
  /** A valid token that may not do this (an ordinary token on the admin API). */
  "auth.forbidden": 403,
  /** The token introspection endpoint did not answer (down, slow, or not RFC 7662): never a guess. */
  "auth.introspection_unavailable": 503,
  "policy.image_not_allowed": 403,
  "policy.tool_not_allowed": 403,
  "policy.workspace_disabled": 403,
  /** The workspace requires a stronger isolation (gVisor) than any pool serving the image has. */
  "policy.isolation_required": 403,
  /** A session's egress narrowing reaches beyond the workspace's (or the workspace has no egress). */
  "policy.egress_not_allowed": 403,
  /** A session names a secret its workspace does not hold. */
  "policy.secret_not_allowed": 403,
  "quota.concurrent_sessions": 429,
  "quota.session_rate": 429,
  "quota.exec_budget": 429,
  /** The workspace keeps as many hibernated sessions as its policy allows (maxHibernatedSessions). */
  "quota.hibernated_sessions": 429,
  /** The workspace has as many calls in flight on this replica as it may. */
  "quota.calls_in_flight": 429,
  "capacity.exhausted": 503,
  /**
   * The checkpoint store is at its byte cap (hibernate.maxStoreBytes) or its disk under its
   * free floor (hibernate.minFreeBytes): the session is not hibernated and keeps running.
   */
  "capacity.checkpoint_space": 503,
  "store.unavailable": 503,
  /** Workspace secrets need the deployment's key ring (secrets.keys or secrets.keysFile), and it has none. */
  "secrets.not_configured": 503,
  "sandbox.unreachable": 502,
  "sandbox.timeout": 504,
  /** The sandbox answered more than the gateway reads, or what it cannot make sense of. */
  "sandbox.bad_answer": 502,
  "server.internal": 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

/** Whether `code` is one of this version's codes (an answer from a newer gateway may carry another). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(errorStatus, code);
}
export type ErrorStatus = (typeof errorStatus)[ErrorCode];

export interface ErrorBody {
  /** `problems`: every problem of a refused input, one per entry (the message joins them). */
  detail: { code: ErrorCode; message: string; problems?: readonly string[] };
}

/** The label a code outside the enum gets: what a sandbox answers is not trusted. */
export const UNKNOWN_CODE_LABEL = "sandbox.other";

/**
 * A code as a metric label: a known code as it is, anything else (a sandbox's own or forged
 * `detail.code`, a non-string) as one fixed value, so no answer can add label values.
 */
export function errorCodeLabel(code: unknown): ErrorCode | typeof UNKNOWN_CODE_LABEL {
  return typeof code === "string" && Object.hasOwn(errorStatus, code)
    ? (code as ErrorCode)
    : UNKNOWN_CODE_LABEL;
}

export function errorBody(code: ErrorCode, message: string, problems?: readonly string[]): ErrorBody {
  return { detail: problems === undefined ? { code, message } : { code, message, problems } };
}

/** An expected failure: carries a stable code; its message is safe to show the caller. */
export class SandpoolError extends Error {
  readonly status: ErrorStatus;
  /** Seconds a client should wait before retrying (429 / 503), sent as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;
  /** Headers the answer must carry (e.g. `Allow` on a 405). */
  readonly headers: Readonly<Record<string, string>>;
  /** Every problem of a refused input, as a list (the body's `detail.problems`). */
  readonly problems: readonly string[] | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: {
      retryAfterSeconds?: number;
      headers?: Record<string, string>;
      cause?: unknown;
      problems?: readonly string[];
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "SandpoolError";
    this.status = errorStatus[code];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers ?? {};
    // A refused input always lists its problems, one at least, however it was raised.
    this.problems = options.problems ?? (code === "request.malformed" ? [message] : undefined);
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.problems);
  }
}

/** 422 `request.malformed` listing every problem (the message joins them with "; "). */
export function malformed(problems: readonly string[]): SandpoolError {
  return new SandpoolError("request.malformed", problems.join("; "), { problems });
}
