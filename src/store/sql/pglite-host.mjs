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

// Postgres' memory sized for dev mode's database (a few policy rows and usage records, one
// session at a time) rather than for a server: the shared buffers (128 MB by default) and
// the per-connection arrays are allocated, and touched, inside the WebAssembly memory at
// start. work_mem and temp_buffers are caps, not allocations; maintenance_work_mem is capped
// so a migration's index build stays small. The Node flags this process runs with are in
// pglite-process.ts.
const START_PARAMS = [
  ...PGlite.defaultStartParams,
  ...["shared_buffers=4MB", "max_connections=4", "maintenance_work_mem=16MB", "temp_buffers=2MB"].flatMap(
    (setting) => ["-c", setting],
  ),
];

let pglite;
let closing;

async function open({ dataDir, loadDataDir }) {
  try {
    pglite = await PGlite.create(dataDir, {
      startParams: START_PARAMS,
      ...(loadDataDir ? { loadDataDir: new Blob([loadDataDir]) } : {}),
    });
    process.send({ ready: true });
  } catch (error) {
    process.send({ ready: false, error: describeError(error) });
    process.disconnect();
  }
}

/**
 * Creates a database (initdb) and exits. PGlite runs initdb in a second WebAssembly instance
 * whose memory (~450 MB of RSS) this process would keep for its whole life, though the
 * instance is closed: so a new database is made by a host of its own, and the host that
 * serves it starts from what that one left (the data dir, or a dump when in memory).
 */
async function initdb({ dataDir }) {
  try {
    const fresh = await PGlite.create(dataDir, { startParams: START_PARAMS });
    const dump = dataDir ? undefined : new Uint8Array(await (await fresh.dumpDataDir("none")).arrayBuffer());
    await fresh.close();
    // The dump is tens of MB: the channel closes once it has gone, not before.
    process.send({ ready: true, dump }, () => process.disconnect());
  } catch (error) {
    process.send({ ready: false, error: describeError(error) }, () => process.disconnect());
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
  queue = queue.then(() => {
    if (request.op === "open") return open(request);
    if (request.op === "initdb") return initdb(request);
    return answer(request);
  });
});
process.on("disconnect", () => {
  void queue.then(close).finally(() => process.exit(0));
});
