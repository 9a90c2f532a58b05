/**
 * Telling Docker's answers apart: an API error carries the HTTP status the engine sent
 * (dockerode sets `statusCode`); anything without one never reached the engine, and that is
 * what marks an engine down.
 */

export function dockerStatusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === "number" ? status : undefined;
}

/** The engine did not answer at all (refused, no socket, reset, timed out). */
export function isEngineUnreachable(error: unknown): boolean {
  if (!(error instanceof Error) || dockerStatusOf(error) !== undefined) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === "string" || /socket hang up|timeout|timed out/i.test(error.message);
}

/** The engine's own message (`json.message`), else the error's. */
export function dockerMessageOf(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const json = (error as { json?: unknown }).json;
    if (
      typeof json === "object" &&
      json !== null &&
      typeof (json as { message?: unknown }).message === "string"
    )
      return (json as { message: string }).message;
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
  }
  return String(error);
}
