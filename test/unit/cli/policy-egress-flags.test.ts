/** `sandpool policy set`'s egress flags become the admin API's egress fields. */
import { describe, expect, it } from "vitest";
import { editOf, policyCommand } from "../../../src/cli/commands/policy-command.js";

function setOptions(...argv: string[]) {
  const set = policyCommand().commands.find((command) => command.name() === "set")!;
  set.parseOptions(argv);
  return set.opts();
}

describe("policy set --egress-allow-cidrs / --egress-allow-hosts", () => {
  it("send comma-separated lists", () => {
    const options = setOptions(
      "--egress-allow-cidrs",
      "10.1.0.0/16, fd00::/8",
      "--egress-allow-hosts",
      "pypi.org,*.pythonhosted.org",
    );
    expect(editOf(options)).toEqual({
      egressAllowCidrs: ["10.1.0.0/16", "fd00::/8"],
      egressAllowHosts: ["pypi.org", "*.pythonhosted.org"],
    });
  });

  it("an empty value sends an empty list; --clear sends null", () => {
    expect(editOf(setOptions("--egress-allow-hosts", ""))).toEqual({ egressAllowHosts: [] });
    expect(editOf(setOptions("--clear", "egress-allow-cidrs", "--clear", "egressAllowHosts"))).toEqual({
      egressAllowCidrs: null,
      egressAllowHosts: null,
    });
  });
});
