// The process that owns dev mode's in-process Postgres (PGlite), started by pglite-process.ts.
//
// Why a process of its own: PGlite runs Postgres as WebAssembly on the thread that calls it,
// so on the gateway's thread every usage flush and policy read held up requests; and its
// memory, in the gateway's process, made every fork (each sandbox the process runtime starts)
// several times slower, stalling the gateway for tens of milliseconds per start.
//
// Plain JavaScript, not TypeScript: it is started as it is, both from dist/ and when the tests
// run the sources. It speaks over the IPC channel (advanced serialization: dates, byte arrays
// and parsed JSON keep their types):
//   in:  { op: "open", dataDir?, loadDataDir? } first; then { id, op: "query", sql, params },
//        { id, op: "exec", sql } or { id, op: "close" }
//   out: { ready: true } once open, or { ready: false, error }; then { id, result } or
//        { id, error } per request.
// It outlives nothing: when the gateway goes (even killed), the channel closes and the
// database is closed cleanly before this process exits.
import { PGlite } from "@electric-sql/pglite";

// Ctrl-C reaches the whole process group; the gateway decides when the database closes
// (after its last usage flush), so these signals are left to it.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => {});

/** What crosses the process boundary of an error: its message and Postgres' fields. */
function describeError(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  const fields = {};
  for (const [key, value] of Object.entries(error)) {
    if (["string", "number", "boolean"].includes(typeof value)) fields[key] = value;
  }
  return { ...fields, name: error.name, message: error.message };
}

/** PGlite's results without what need not cross (field descriptions, blobs). */
function plainResult(result) {
  return {
    rows: result.rows,
    command: result.command,
    rowCount: result.rowCount,
    affectedRows: result.affectedRows,
  };
}

let pglite;
let closing;

async function open({ dataDir, loadDataDir }) {
  try {
    pglite = await PGlite.create(dataDir, loadDataDir ? { loadDataDir: new Blob([loadDataDir]) } : {});
    process.send({ ready: true });
  } catch (error) {
    process.send({ ready: false, error: describeError(error) });
    process.disconnect();
  }
}

async function close() {
  closing ??= pglite && !pglite.closed ? pglite.close() : Promise.resolve();
  await closing;
}

async function answer({ id, op, sql, params }) {
  try {
    let result = null;
    if (op === "query") result = plainResult(await pglite.query(sql, params));
    else if (op === "exec") result = (await pglite.exec(sql)).map(plainResult);
    else if (op === "close") await close();
    else throw new Error(`unknown operation '${op}'`);
    process.send({ id, result });
    if (op === "close") process.disconnect();
  } catch (error) {
    process.send({ id, error: describeError(error) });
  }
}

// One request at a time, in arrival order: PGlite is a single Postgres session, and the
// gateway already hands that session to one holder at a time (transactions).
let queue = Promise.resolve();
process.on("message", (request) => {
  queue = queue.then(() => (request.op === "open" ? open(request) : answer(request)));
});
process.on("disconnect", () => {
  void queue.then(close).finally(() => process.exit(0));
});
