/**
 * What a server command (dev, serve, sandbox) prints once it is ready: lines for people, or,
 * with --json, one JSON object on one line for programs (a supervisor or a test reads its URL).
 */
export function printReady(json: boolean, lines: readonly string[], fields: Record<string, unknown>): void {
  process.stdout.write(json ? `${JSON.stringify(fields)}\n` : `${lines.join("\n")}\n`);
}
