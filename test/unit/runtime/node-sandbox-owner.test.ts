/** A node's owner label: label- and folder-safe whatever its id, and distinct for distinct ids. */
import { describe, expect, it } from "vitest";
import { nodeSandboxOwner } from "../../../src/roles/shared/node-settings.js";

const LABEL_SAFE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

describe("nodeSandboxOwner", () => {
  it("folds an id to a label: lower case, at most 63, with a hash", () => {
    for (const id of ["Node-A", "ip-10-0-0-5.ec2.internal", "_x", "a".repeat(128), "k8s.node/1"]) {
      expect(nodeSandboxOwner(id), id).toMatch(LABEL_SAFE);
    }
    expect(nodeSandboxOwner("node-a")).toMatch(/^node-a-[0-9a-f]{8}$/);
  });

  it("keeps ids apart that fold to the same letters, and gives one id one label", () => {
    expect(nodeSandboxOwner("Node.A")).not.toBe(nodeSandboxOwner("node-a"));
    expect(nodeSandboxOwner("node-a")).toBe(nodeSandboxOwner("node-a"));
  });
});
