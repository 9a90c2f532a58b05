/**
 * Reads a workspace's refusals off a gateway's audit listing (`GET /admin/v1/audit?kind=denied`)
 * once at least `count` are there: the audit is written off the hot path, so a test waits
 * for it, two seconds at most (the audit's promise).
 */
import { expect } from "vitest";
import type { DeniedItem } from "../../src/store/sql/audit-repository.js";
import { adminApi } from "./admin-api.js";
import { waitFor } from "./wait-for.js";

export async function deniedListed(
  url: string,
  adminToken: string,
  workspace: string,
  count: number,
  what: string,
): Promise<DeniedItem[]> {
  let items: DeniedItem[] = [];
  await waitFor(
    async () => {
      const answer = await adminApi(url, adminToken)("GET", `/audit?workspace=${workspace}&kind=denied`);
      expect(answer.status, answer.text).toBe(200);
      items = (answer.body as { items: DeniedItem[] }).items;
      return items.length >= count;
    },
    2_000,
    what,
  );
  return items;
}
