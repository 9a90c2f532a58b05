import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgliteProcess } from "../../../src/store/sql/pglite-process.js";
import { openPgliteProcessFromTemplate } from "./pglite-template.js";

describe("PgliteProcess: PGlite in a process of its own", () => {
  let db: PgliteProcess;
  beforeAll(async () => {
    db = await openPgliteProcessFromTemplate();
  });
  afterAll(async () => {
    await db?.close();
  });

  it("keeps the types of parameters and rows across the process boundary", async () => {
    const at = new Date("2026-01-02T03:04:05.678Z");
    const result = await db.query(
      "select $1::timestamptz as at, $2::jsonb as doc, $3::bytea as bytes, $4::int as n, $5::text as t",
      [at, JSON.stringify({ a: [1, "two"] }), new Uint8Array([0, 255, 7]), 42, "héllo"],
    );
    const row = result.rows[0] as Record<string, unknown>;
    expect(row.at).toEqual(at);
    expect(row.doc).toEqual({ a: [1, "two"] });
    expect(Array.from(row.bytes as Uint8Array)).toEqual([0, 255, 7]);
    expect(row.n).toBe(42);
    expect(row.t).toBe("héllo");
    expect(result.command).toBe("SELECT");
  });

  it("runs a multi-statement script through exec and reports each statement", async () => {
    const results = await db.exec(
      "create temporary table t (n int); insert into t values (1), (2); select count(*)::int as c from t;",
    );
    expect(results.map((r) => r.command)).toEqual(["CREATE", "INSERT", "SELECT"]);
    expect(results[2]?.rows).toEqual([{ c: 2 }]);
  });

  it("answers concurrent queries each with its own result", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => db.query("select $1::int * 2 as v", [i])),
    );
    expect(answers.map((a) => (a.rows[0] as { v: number }).v)).toEqual(
      Array.from({ length: 20 }, (_, i) => i * 2),
    );
  });

  it("rejects with Postgres' error fields, and keeps serving afterwards", async () => {
    const error = await db.query("select 1 / 0").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/division by zero/);
    expect((error as { code?: string }).code).toBe("22012");
    expect((await db.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });
});

describe("PgliteProcess lifecycle", () => {
  it("refuses calls once closed, and closing twice (even at once) is harmless", async () => {
    const db = await openPgliteProcessFromTemplate();
    await Promise.all([db.close(), db.close()]);
    expect(db.closed).toBe(true);
    await db.close();
    await expect(db.query("select 1")).rejects.toThrow(/the database is closed/);
  });

  it("serves a new database from a host that did not run initdb: its RSS stays small", async () => {
    // initdb's WebAssembly instance would stay in the host's RSS (~450 MB more) for its whole
    // life; a host of its own creates the database and exits. Both ways of making one.
    const dir = await mkdtemp(path.join(tmpdir(), "sandpool-pglite-process-"));
    try {
      for (const dataDir of [path.join(dir, "data"), undefined]) {
        const db = await PgliteProcess.open({ dataDir });
        await db.exec("create table t (n int); insert into t select generate_series(1, 1000);");
        expect((await db.query("select count(*)::int as c from t")).rows).toEqual([{ c: 1000 }]);
        const status = await readFile(`/proc/${db.pid}/status`, "utf8");
        const rssMb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
        await db.close();
        // On disk ~110 MB; in memory ~300 MB (the cluster's files and their dump live in the host).
        expect(rssMb).toBeLessThan(dataDir ? 200 : 400);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("keeps its data in dataDir across a close and a new process", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "sandpool-pglite-process-"));
    try {
      const first = await PgliteProcess.open({ dataDir: dir });
      await first.exec("create table kept (v text); insert into kept values ('still here');");
      await first.close();
      const second = await PgliteProcess.open({ dataDir: dir });
      expect((await second.query("select v from kept")).rows).toEqual([{ v: "still here" }]);
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("fails to open, with the reason, when the data dir cannot be used", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "sandpool-pglite-process-"));
    const notADir = path.join(dir, "a-file");
    await writeFile(notADir, "not a data directory");
    try {
      await expect(PgliteProcess.open({ dataDir: notADir })).rejects.toThrow(Error);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("PgliteProcess when the gateway goes", () => {
  it("closes the database cleanly and exits when its parent is killed", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "sandpool-pglite-process-"));
    const script = path.join(dir, "parent.mjs");
    const moduleUrl = new URL("../../../dist/store/sql/pglite-process.js", import.meta.url).href;
    // A parent that writes a row, says so, and then waits to be killed.
    await writeFile(
      script,
      `import { PgliteProcess } from ${JSON.stringify(moduleUrl)};
       const db = await PgliteProcess.open({ dataDir: ${JSON.stringify(path.join(dir, "data"))} });
       await db.exec("create table kept (v text); insert into kept values ('written before the kill');");
       console.log("written");
       setInterval(() => {}, 1000);`,
    );
    try {
      const { spawn } = await import("node:child_process");
      const parent = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
      await new Promise<void>((resolve, reject) => {
        parent.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("written")) resolve();
        });
        parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
      });
      parent.kill("SIGKILL");
      // The host closes the database and exits: a new one can then open the same data dir.
      const reopened = await waitForOpen(path.join(dir, "data"));
      expect((await reopened.query("select v from kept")).rows).toEqual([{ v: "written before the kill" }]);
      await reopened.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Opens dataDir once the previous owner has let go of it. */
async function waitForOpen(dataDir: string): Promise<PgliteProcess> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await PgliteProcess.open({ dataDir });
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
