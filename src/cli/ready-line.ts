/**
 * What a server command (dev, serve, sandbox) prints once it is ready: lines for people, or,
 * with --json, one JSON object on one line for programs (a supervisor or a test reads its URL).
 */
export function printReady(json: boolean, lines: readonly string[], fields: Record<string, unknown>): void {
  process.stdout.write(json ? `${JSON.stringify(fields)}\n` : `${lines.join("\n")}\n`);
}

/** A gateway's ready line (serve, or an edge): its URL, and its admin listener's when it has one. */
export function printGatewayReady(
  json: boolean,
  what: "serve" | "edge",
  gateway: { url: string; admin?: { url: string } | undefined },
): void {
  const adminUrl = gateway.admin ? `${gateway.admin.url}/admin/v1` : undefined;
  printReady(
    json,
    [
      `sandpool ${what} listening on ${gateway.url}`,
      ...(adminUrl ? [`sandpool ${what} admin API on ${adminUrl}`] : []),
    ],
    { url: gateway.url, ...(adminUrl ? { adminUrl } : {}) },
  );
}
