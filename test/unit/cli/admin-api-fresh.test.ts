/**
 * The CLI's admin client types (src/cli/generated/admin-api.ts) are generated from the admin view
 * of the OpenAPI document and committed: they must be what the registry gives today.
 */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { ADMIN_API_FILE, adminClientSource } from "../../../scripts/admin-client-source.mjs";
import { openApiDocument } from "../../../src/discovery/openapi-document.js";

describe("the admin client types", () => {
  it("are the ones the registry's document gives (else run `npm run gen:admin-client`)", async () => {
    const committed = await readFile(new URL(`../../../${ADMIN_API_FILE}`, import.meta.url), "utf8");
    const fresh = await adminClientSource(openApiDocument("admin"));
    const stale = "src/cli/generated/admin-api.ts is stale: run `npm run gen:admin-client`";
    expect(committed === fresh, stale).toBe(true);
  });
});
