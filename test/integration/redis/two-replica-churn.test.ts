/**
 * Session churn through two replicas on one Redis, as production runs them, asserting no
 * 5xx at all: several workspaces with a low session limit, clients that each create a
 * session, run every tool, put, list and get a file, and destroy it, again and again, each
 * call sent to the other replica than the one before. Sessions beyond a workspace's limit
 * are refused with 429 (the client waits and tries again); nothing may answer 503
 * `store.unavailable` while Redis is healthy, nor any other 5xx.
 *
 * Bounded in count and time, loopback only; the sandboxes are real sandbox servers (the
 * process runtime), shared by both replicas. The replicas' event-loop delay is printed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Answer, ContractClient } from "../../support/contract-client.js";
import { redisAvailable } from "../../support/redis.js";
import {
  createRedisDeployment,
  type RedisDeployment,
  type RedisReplica,
} from "../../support/redis-gateways.js";
import { postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const WORKSPACES = 3;
const SESSION_LIMIT = 2;
const CLIENTS_PER_WORKSPACE = 3;
const ROUNDS = 3;
const TIME_LIMIT_MS = 90_000;

describe.skipIf(!available)("two replicas under session churn", () => {
  let deployment: RedisDeployment;
  let replicas: RedisReplica[];

  beforeAll(async () => {
    deployment = await createRedisDeployment({
      policy: {
        allowedImages: ["sandpool/sandbox:dev"],
        defaultImage: "sandpool/sandbox:dev",
        maxConcurrentSessions: SESSION_LIMIT,
        sessionsPerMinute: 1_000,
      },
      // Room for every session allowed at once, and a pool that refills behind them.
      pools: [
        {
          name: "default",
          image: "sandpool/sandbox:dev",
          minIdle: 3,
          maxTotal: WORKSPACES * SESSION_LIMIT + 6,
          coldStartTimeoutMs: 30_000,
        },
      ],
      intervals: { warmMs: 250, reapMs: 250, reconcileMs: 2_000 },
    });
    replicas = [await deployment.startReplica(), await deployment.startReplica()];
    await replicas[0]!.gateway.services.pools.warmAll();
  }, 120_000);

  afterAll(() => deployment?.close(), 60_000);

  it("answers every call of the churn without a 5xx", async () => {
    const statuses = new Map<string, number>();
    const failures: string[] = [];
    const deadline = Date.now() + TIME_LIMIT_MS;
    const record = (operation: string, answer: Answer) => {
      const key = `${operation} ${answer.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (answer.status >= 500) failures.push(`${key}: ${answer.text.slice(0, 200)}`);
      return answer;
    };

    async function churn(workspace: string, clientIndex: number) {
      const clients: ContractClient[] = await Promise.all(replicas.map((r) => r.client(workspace)));
      let turn = clientIndex;
      const next = () => clients[turn++ % clients.length]!;
      for (let round = 0; round < ROUNDS && Date.now() < deadline; round++) {
        let created: Answer | undefined;
        while (Date.now() < deadline) {
          created = record("CreateSession", await next().createSession());
          if (created.status !== 429) break;
          await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
        }
        if (created?.status !== 201) {
          if (created) failures.push(`CreateSession ${created.status}: ${created.text.slice(0, 200)}`);
          return;
        }
        const id = (created.body as { session_id: string }).session_id;
        const exec = async (tool: string, input: unknown) =>
          record("Execute", await next().exec(id, { tool, input }));
        const code = await exec("code_execution", { code: `print(${round} * 7)` });
        expect(code.status).toBe(200);
        expect(
          (code.body as { result_block: { content: { stdout: string } } }).result_block.content.stdout,
        ).toBe(`${round * 7}\n`);
        expect((await exec("bash_code_execution", { command: "echo -n ok" })).status).toBe(200);
        expect(
          (await exec("text_editor_code_execution", { command: "create", path: "n.txt", file_text: "x" }))
            .status,
        ).toBe(200);
        expect((await exec("text_editor_code_execution", { command: "view", path: "n.txt" })).status).toBe(
          200,
        );
        expect(
          record("PutFile", await next().putFile(id, `round ${round}`, { path: "in/r.txt" })).status,
        ).toBe(201);
        expect(record("ListFiles", await next().listFiles(id, "in")).status).toBe(200);
        const got = record("GetFile", await next().getFile(id, "in/r.txt"));
        expect(got.text).toBe(`round ${round}`);
        expect(record("GetSession", await next().getSession(id)).status).toBe(200);
        expect(record("DestroySession", await next().destroy(id)).status).toBe(204);
      }
    }

    const before = await Promise.all(replicas.map((replica) => delaySamples(replica)));
    const runs: Promise<void>[] = [];
    for (let w = 0; w < WORKSPACES; w++) {
      for (let i = 0; i < CLIENTS_PER_WORKSPACE; i++) runs.push(churn(`churn-${w}`, i));
    }
    await Promise.all(runs);

    const after = await Promise.all(replicas.map((replica) => delaySamples(replica)));
    const delays = after.map((samples, i) => worstDelay(before[i]!, samples));
    console.log(
      `churn: ${[...statuses.entries()].map(([k, n]) => `${k} x${n}`).join(", ")}; ` +
        `event-loop delay during the churn, worst bucket reached per replica: ${delays.join(", ")}`,
    );
    expect(failures).toEqual([]);
    const created = statuses.get("CreateSession 201") ?? 0;
    expect(created).toBe(WORKSPACES * CLIENTS_PER_WORKSPACE * ROUNDS);
  }, 150_000);
});

/** The cumulative bucket counts of sandpool_event_loop_delay_seconds, by upper bound. */
async function delaySamples(replica: RedisReplica): Promise<Map<string, number>> {
  const text = await (await fetch(`${replica.url}/metrics`)).text();
  const buckets = text.matchAll(/^sandpool_event_loop_delay_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm);
  return new Map([...buckets].map(([, le, count]) => [le!, Number(count)]));
}

/** The upper bound of the lowest bucket holding every sample taken between two scrapes. */
function worstDelay(before: Map<string, number>, after: Map<string, number>): string {
  const added = (le: string) => after.get(le)! - (before.get(le) ?? 0);
  const total = added("+Inf");
  const reached = [...after.keys()].find((le) => added(le) === total);
  return `<= ${reached} s (${total} samples)`;
}
