/**
 * `sandpool secrets set`'s options as the PUT body's binding, and its value read from a file
 * or stdin only (one trailing newline dropped): never an argument, which `ps` would show.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { AdminUsageError } from "../../../src/cli/admin/admin-client.js";
import { bindingBodyOf, readSecretValue, secretsCommand } from "../../../src/cli/commands/secrets-command.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-secrets-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("sandpool secrets set", () => {
  it("turns its options into the binding of the PUT body", () => {
    expect(
      bindingBodyOf({
        host: ["api.github.com", "*.githubusercontent.com"],
        header: "Authorization",
        template: "Bearer {{secret}}",
        port: [443],
        path: ["/repos/"],
        method: ["get", "POST"],
      }),
    ).toEqual({
      hosts: ["api.github.com", "*.githubusercontent.com"],
      ports: [443],
      paths: ["/repos/"],
      methods: ["GET", "POST"],
      header: "Authorization",
      template: "Bearer {{secret}}",
    });
    expect(bindingBodyOf({ host: ["upload.pypi.org"], basicAuthUser: "__token__" })).toEqual({
      hosts: ["upload.pypi.org"],
      basicAuth: { username: "__token__" },
    });
    // A header alone carries the value as it is.
    expect(bindingBodyOf({ host: ["a.example"], header: "X-Api-Key" })).toMatchObject({
      template: "{{secret}}",
    });
  });

  it("refuses a missing host, no presentation, or both presentations, as usage errors", () => {
    expect(() => bindingBodyOf({ header: "Authorization" })).toThrow(/--host is required/);
    expect(() => bindingBodyOf({ host: ["a.example"] })).toThrow(
      /--header and --template .* or --basic-auth-user/,
    );
    expect(() => bindingBodyOf({ host: ["a.example"], header: "X", basicAuthUser: "u" })).toThrow(
      AdminUsageError,
    );
  });

  it("reads the value from a file or stdin, dropping one trailing newline", async () => {
    const file = path.join(dir, "token");
    writeFileSync(file, "ghp_fromfile\n");
    expect(await readSecretValue({ valueFile: file })).toBe("ghp_fromfile");
    expect(
      await readSecretValue({ valueStdin: true }, Readable.from([Buffer.from("from-"), "stdin\r\n"])),
    ).toBe("from-stdin");
    await expect(readSecretValue({})).rejects.toThrow(
      /--value-file FILE or --value-stdin \(never on the command line\)/,
    );
    await expect(readSecretValue({ valueFile: file, valueStdin: true })).rejects.toThrow(AdminUsageError);
    await expect(readSecretValue({ valueFile: path.join(dir, "absent") })).rejects.toThrow(
      /cannot be read \(ENOENT\)/,
    );
    await expect(readSecretValue({ valueStdin: true }, Readable.from(["\n"]))).rejects.toThrow(
      /the value is empty/,
    );
  });

  it("has no option that takes the value itself, and shows an example in its help", () => {
    const set = secretsCommand().commands.find((command) => command.name() === "set")!;
    const flags = set.options.map((option) => option.long);
    expect(flags).toEqual(
      expect.arrayContaining(["--value-file", "--value-stdin", "--host", "--basic-auth-user"]),
    );
    expect(flags).not.toContain("--value");
    let help = "";
    set.configureOutput({ writeOut: (text) => (help += text) });
    set.outputHelp();
    expect(help).toMatch(/Examples:\n\s+sandpool secrets set team-a github --host api\.github\.com/);
  });
});
