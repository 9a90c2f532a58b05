import { mkdirSync } from "node:fs";
import { chmod, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { asWorkspaceError } from "../../../src/sandbox/files/workspace-errors.js";
import { removeTree } from "../../../src/sandbox/sessions/remove-tree.js";
import { repairDirectories } from "../../../src/sandbox/sessions/workspace-repair.js";

let root: string;
let session: string;
let workspace: string;
const chain = () => [root, session, workspace];

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "sandpool-repair-"));
  session = path.join(root, "s1");
  workspace = path.join(session, "workspace");
  await mkdir(workspace, { recursive: true, mode: 0o700 });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = async (dir: string) => (await stat(dir)).mode & 0o777;

describe("repairDirectories", () => {
  it("touches nothing that is as it should be", async () => {
    await writeFile(path.join(workspace, "kept"), "x");
    expect(await repairDirectories(chain())).toBe(false);
    expect(await readFile(path.join(workspace, "kept"), "utf8")).toBe("x");
  });

  it("makes again what was deleted, the session's directory with it", async () => {
    await rm(session, { recursive: true });
    expect(await repairDirectories(chain())).toBe(true);
    expect((await lstat(workspace)).isDirectory()).toBe(true);
    expect(await mode(workspace)).toBe(0o700);
  });

  it("gives a chmod-ed directory back its owner's bits", async () => {
    await chmod(workspace, 0o000);
    await chmod(session, 0o111);
    expect(await repairDirectories(chain())).toBe(true);
    expect([await mode(session), await mode(workspace)]).toEqual([0o700, 0o700]);
  });

  it("replaces a file put in a directory's place", async () => {
    await rm(workspace, { recursive: true });
    await writeFile(workspace, "not a directory");
    await repairDirectories(chain());
    expect((await lstat(workspace)).isDirectory()).toBe(true);
  });

  it("replaces a symlink put in a directory's place, and leaves what it pointed to alone", async () => {
    const elsewhere = path.join(root, "elsewhere");
    mkdirSync(elsewhere);
    await writeFile(path.join(elsewhere, "precious"), "x");
    await rm(session, { recursive: true });
    await symlink(elsewhere, session);
    await repairDirectories(chain());
    expect((await lstat(session)).isDirectory()).toBe(true);
    expect((await lstat(workspace)).isDirectory()).toBe(true);
    expect(await readFile(path.join(elsewhere, "precious"), "utf8")).toBe("x");
  });

  it("answers a 4xx when a directory cannot be put back", async () => {
    // Below a file, as the chain's first step: nothing can be made there.
    await writeFile(path.join(root, "file"), "x");
    const refused = await repairDirectories([path.join(root, "file", "dir")]).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SandpoolError);
    expect((refused as SandpoolError).status).toBe(400);
  });
});

describe("removeTree", () => {
  it("deletes the tree, a symlink in it without what it points to", async () => {
    const elsewhere = path.join(root, "elsewhere");
    mkdirSync(elsewhere);
    await writeFile(path.join(elsewhere, "precious"), "x");
    await mkdir(path.join(workspace, "d", "e"), { recursive: true });
    await symlink(elsewhere, path.join(workspace, "link"));
    await chmod(path.join(workspace, "d"), 0o000);
    await removeTree(session);
    await expect(lstat(session)).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readFile(path.join(elsewhere, "precious"), "utf8")).toBe("x");
  });

  it("deletes a tree too large to delete synchronously, and one that is a symlink itself", async () => {
    for (let i = 0; i < 10; i++) {
      await mkdir(path.join(workspace, `d${i}`));
      for (let j = 0; j < 10; j++) await writeFile(path.join(workspace, `d${i}`, `f${j}`), "x");
    }
    await removeTree(session);
    await expect(lstat(session)).rejects.toMatchObject({ code: "ENOENT" });
    const elsewhere = path.join(root, "elsewhere");
    mkdirSync(elsewhere);
    await writeFile(path.join(elsewhere, "precious"), "x");
    await symlink(elsewhere, session);
    await removeTree(session);
    await expect(lstat(session)).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readFile(path.join(elsewhere, "precious"), "utf8")).toBe("x");
  });
});

describe("asWorkspaceError", () => {
  const errno = (code: string) => Object.assign(new Error(code), { code });

  it.each([
    ["ENOENT", 404],
    ["ENOTDIR", 404],
    ["EACCES", 400],
    ["EPERM", 400],
    ["ELOOP", 400],
    ["ENAMETOOLONG", 400],
    ["EISDIR", 400],
    ["ENOSPC", 413],
  ])("%s is the caller's %d", (code, status) => {
    const mapped = asWorkspaceError(errno(code));
    expect(mapped).toBeInstanceOf(SandpoolError);
    expect((mapped as SandpoolError).status).toBe(status);
  });

  it("passes the server's own faults and SandpoolErrors through", () => {
    const own = errno("EMFILE");
    expect(asWorkspaceError(own)).toBe(own);
    const refused = new SandpoolError("file.not_found", "no");
    expect(asWorkspaceError(refused)).toBe(refused);
    const bug = new TypeError("x is undefined");
    expect(asWorkspaceError(bug)).toBe(bug);
  });
});
