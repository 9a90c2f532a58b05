/**
 * docs/configuration.md is what the configuration schema renders today
 * (configuration-doc.ts), so a setting added, removed or re-documented in src/config/ shows
 * up in the docs or fails here. When it fails, regenerate the file:
 *   SANDPOOL_UPDATE_DOCS=1 npx vitest run test/unit/docs/configuration-doc.test.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configEnvVariables } from "../../../src/config/config-env.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { formatKeyPath, keyLocations } from "../../../src/contract/did-you-mean.js";
import { CONFIGURATION_DOC, REGENERATE, renderConfigurationDoc } from "./configuration-doc.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const file = path.join(root, CONFIGURATION_DOC);

describe("docs/configuration.md", () => {
  const rendered = renderConfigurationDoc();
  if (process.env.SANDPOOL_UPDATE_DOCS === "1") writeFileSync(file, rendered);

  it("is the configuration schema as rendered today", () => {
    const onDisk = readFileSync(file, "utf8");
    expect(onDisk === rendered, `${CONFIGURATION_DOC} is stale: run ${REGENERATE}`).toBe(true);
  });

  it("names every setting the loader accepts", () => {
    const missing = keyLocations(gatewayConfigSchema)
      .map(({ key, parent }) => formatKeyPath([...parent, key]))
      .filter((name) => !rendered.includes(`\`${name}\``) && !rendered.includes(`\`${name}[]\``));
    expect(missing).toEqual([]);
  });

  it("names every environment variable", () => {
    const missing = configEnvVariables.filter((variable) => !rendered.includes(`\`${variable.name}\``));
    expect(missing).toEqual([]);
  });
});
