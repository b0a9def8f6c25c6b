import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_PATHS } from '../../server/probes.js';
import {
  cli,
  cliAsync,
  FIXTURE_ARTICLES,
  FIXTURES,
  ingestAndRun,
  keptValues,
  workspace,
} from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { clickHouseServer, type ServerDatabase } from '../services/clickhouse-server.js';
import { until } from '../until.js';
import { ALL_IN_ONE_IMAGE, HARDENED, inspectImage, podman, podmanAsync, WORKER_IMAGE } from './podman.js';

/** The process's own stop bound (cli/context.ts STOP_DEADLINE_MS) and what a container adds to it. */
const STOP_BOUND_MS = 9_000;
const CONTAINER_OVERHEAD_MS = 3_000;
/** The bound on the Kafka worker's image (BENCHMARKS.md says what makes it up). */
const MAX_IMAGE_BYTES = 600 * 1000 * 1000;

/** The dataset as its readers see it (classified less withdrawn), by QA id. */
const classifiedIds = async (dir: string) => (await keptValues(dir)).map((q) => q.candidate.id).sort();

/** A data folder the image's user (uid 1000) owns, with a config naming container paths. */
function containerWorkspace(llmUrl: string, clickhouse: string) {
  const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-image-'));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      log: 'file:/data/log',
      clickhouse,
      llm: {
        baseUrl: llmUrl,
        apiKeyEnv: 'E2E_LLM_KEY',
        model: 'test-model',
        retry: { baseDelayMs: 5, maxDelayMs: 50 },
      },
    }),
  );
  chmodSync(dir, 0o755);
  chownSync(dir, 1000, 1000);
  chownSync(join(dir, 'config.json'), 1000, 1000);
  return dir;
}

/** `ingest` and `run --until-idle` in the image on the sample articles (mounted read-only); the data folder. */
async function ingestAndRunIn(image: string, dir: string): Promise<string> {
  const mounts = ['-v', `${dir}:/data`, '-v', `${FIXTURES}:/fixtures:ro`, '-e', 'E2E_LLM_KEY=test-key'];
  const inputs = FIXTURE_ARTICLES.map((p) => p.replace(FIXTURES, '/fixtures/'));
  const config = ['--config', '/data/config.json'];
  const ingest = await podmanAsync([
    'run',
    '--rm',
    ...HARDENED,
    ...mounts,
    image,
    'ingest',
    ...inputs,
    ...config,
  ]);
  expect(ingest.code, ingest.stderr).toBe(0);
  const run = await podmanAsync([
    'run',
    '--rm',
    ...HARDENED,
    ...mounts,
    '-e',
    'BIOALCHEMY_LOG_LEVEL=warn',
    image,
    'run',
    '--until-idle',
    ...config,
  ]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/classify\s+in \d+ -> qa\.classified \d+/);
  return dir;
}

// The image built from deploy/Dockerfile (by .ci/run, before the tests: deploy/image/build.sh),
// run as users run it: read-only root filesystem, non-root, every capability dropped, host network
// for the loopback services and the test LLM server.
describe('the image (podman, read-only, non-root)', () => {
  let server: LlmServer;
  const ch = clickHouseServer();
  const databases: ServerDatabase[] = [];
  const containers: string[] = [];
  /** The embedded run's classified QA ids, outside the image: what every other run must give. */
  let expected: string[] = [];

  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
    await ch.version();
  });
  afterAll(async () => {
    for (const c of containers) podman(['rm', '--force', '--time', '0', c]);
    await server?.stop();
    for (const db of databases) await db.dispose();
    await ch.close();
  });

  /** `run` in a detached container of the image on a data folder, hardened; its id (removed after). */
  function startWorker(dir: string, args: string[], env: string[] = []): string {
    const started = podman([
      'run',
      '--detach',
      ...HARDENED,
      '-v',
      `${dir}:/data`,
      '-e',
      'E2E_LLM_KEY=test-key',
      ...env,
      WORKER_IMAGE,
      'run',
      '--config',
      '/data/config.json',
      ...args,
    ]);
    expect(started.status, started.stderr).toBe(0);
    const id = started.stdout.trim();
    containers.push(id);
    return id;
  }

  it('is non-root, with tini as PID 1, OCI labels, and at most 600 MB', () => {
    const image = inspectImage();
    expect(image.Config.User).toBe('1000:1000');
    expect(image.Config.Entrypoint.slice(0, 3)).toEqual(['/usr/bin/tini', '--', 'node']);
    expect(image.Config.Labels['org.opencontainers.image.title']).toBe('bioalchemy-stream');
    expect(image.Config.Labels['org.opencontainers.image.licenses']).toBe('Apache-2.0');
    expect(image.Config.Labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{7,}$/);
    expect(image.Size).toBeLessThanOrEqual(MAX_IMAGE_BYTES);
    // Production dependencies only: no dev tool, no model runtime, no in-process ClickHouse.
    const absent = ['typescript', 'vitest', '@biomejs/biome', 'node-llama-cpp', '@chdb/lib-linux-x64-gnu'];
    const probe = podman([
      'run',
      '--rm',
      ...HARDENED,
      '--entrypoint',
      'sh',
      WORKER_IMAGE,
      '-c',
      `cd /app && for p in ${absent.join(' ')} kafkajs; do [ -e "node_modules/$p/package.json" ] && echo "has $p"; done; id -u; touch /app/x 2>&1; touch /tmp/x && echo tmp-writable`,
    ]);
    expect(probe.status, probe.stderr).toBe(0);
    expect(probe.stdout).toContain('has kafkajs');
    for (const p of absent) expect(probe.stdout).not.toContain(`has ${p}`);
    expect(probe.stdout).toMatch(/^1000$/m);
    expect(probe.stdout).toContain("touch: cannot touch '/app/x': Read-only file system");
    expect(probe.stdout).toContain('tmp-writable');
  });

  it('run --until-idle on the sample articles: the same classified QA ids as outside the image', async () => {
    // Outside: the CLI from source, as the e2e tests run it, on a ClickHouse database of its own.
    const outsideDb = await ch.freshDatabase('image_outside');
    databases.push(outsideDb);
    const outside = workspace(server.url, { clickhouse: outsideDb.url });
    await ingestAndRun(outside.config);
    expected = await classifiedIds(outside.dir);
    expect(expected.length).toBeGreaterThan(5);

    // Inside: the same two commands in the image, the fixtures mounted read-only.
    const insideDb = await ch.freshDatabase('image_inside');
    databases.push(insideDb);
    const dir = await ingestAndRunIn(WORKER_IMAGE, containerWorkspace(server.url, insideDb.url));
    expect(await classifiedIds(dir)).toEqual(expected);
    // It wrote only to its data volume.
    expect(readdirSync(dir).sort()).toEqual(['config.json', 'log']);
  }, 300_000);

  it('the all-in-one image runs the embedded default in one container, ClickHouse in-process (chdb): the same QA ids', async () => {
    expect(expected.length).toBeGreaterThan(5);
    const image = inspectImage(ALL_IN_ONE_IMAGE);
    expect(image.Config.User).toBe('1000:1000');
    expect(image.Config.Labels['io.bioalchemy.variant']).toBe('all-in-one');
    const dir = await ingestAndRunIn(ALL_IN_ONE_IMAGE, containerWorkspace(server.url, 'chdb:/data/chdb'));
    expect(await classifiedIds(dir)).toEqual(expected);
    expect(readdirSync(dir).sort()).toEqual(['chdb', 'config.json', 'log']);
  }, 300_000);

  // Near-duplicate control on Kafka reaches the one-process set whatever the arrival order: a QA
  // that a later-arriving one overtakes (dedupOrder) is kept first and withdrawn after
  // (processors/dedup/join.ts). So the set is polled until it is the embedded one, not a superset.
  it("two Kafka workers from the image (librdkafka) keep the one-process run's QA set, none twice", async () => {
    expect(expected.length).toBeGreaterThan(5);
    const db = await ch.freshDatabase('image_kafka');
    databases.push(db);
    const app = `image-${process.pid}-${Date.now()}`;
    const log = 'kafka://127.0.0.1:19092?client=rdkafka';
    // The articles go in from outside the image, as any producer's would.
    const host = workspace(server.url, { log, app, clickhouse: db.url });
    const ingest = cli(['ingest', ...FIXTURE_ARTICLES, '--config', host.config]);
    expect(ingest.status, ingest.stderr).toBe(0);
    const dirs = [0, 1].map(() => containerWorkspace(server.url, db.url));
    for (const dir of dirs)
      writeFileSync(
        join(dir, 'config.json'),
        JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), log, app }),
      );
    // Two workers of the pipeline's processors, as a Deployment's pods run (the sinks are not
    // needed for the dataset): they share each processor's partitions.
    for (const [i, dir] of dirs.entries())
      startWorker(
        dir,
        [
          '--processors',
          'extract,grade,dedup-bands,dedup,classify',
          '--no-dashboard',
          '--worker-id',
          `w${i}`,
        ],
        ['-e', `BIOALCHEMY_STAMP_KEYS=${process.env.BIOALCHEMY_STAMP_KEYS ?? ''}`],
      );
    // Async: the test LLM server in this process answers the workers meanwhile.
    const consume = async (topic: string) => {
      const r = await cliAsync(['consume', topic, '--config', host.config]);
      if (r.code !== 0) throw new Error(r.stderr);
      return r.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    };
    const kept = async () => {
      const withdrawn = new Set((await consume('qa.withdrawn')).map((w: { qaId: string }) => w.qaId));
      return (await consume('qa.classified'))
        .map((q: { candidate: { id: string } }) => q.candidate.id)
        .filter((id: string) => !withdrawn.has(id))
        .sort();
    };
    let ids: string[] = [];
    await until(
      `the embedded run's ${expected.length} QA ids, exactly, from the two workers`,
      async () => {
        ids = await kept();
        return ids.join() === expected.join() ? true : undefined;
      },
      240_000,
    ).catch(() => {});
    for (const c of containers.splice(0)) {
      const stopped = podman(['stop', '--time', '20', c], 60_000);
      expect(stopped.status, stopped.stderr).toBe(0);
      podman(['rm', '--force', c]);
    }
    expect(ids).toEqual(expected);
  }, 400_000);

  it('serving: /readyz turns ready; SIGTERM stops it within the stop bound, exit 0', async () => {
    const db = await ch.freshDatabase('image_stop');
    databases.push(db);
    const dir = containerWorkspace(server.url, db.url);
    const port = 19_464 + (process.pid % 500);
    const id = startWorker(dir, ['--metrics-port', String(port), '--port', '0', '--dashboard-port', '0']);
    const get = async (path: string) => {
      try {
        return (await fetch(`http://127.0.0.1:${port}${path}`)).status;
      } catch {
        return 0;
      }
    };
    await until(`the container's ${PROBE_PATHS.ready}`, async () =>
      (await get(PROBE_PATHS.ready)) === 200 ? true : undefined,
    );
    expect(await get(PROBE_PATHS.live)).toBe(200);
    expect(await get(PROBE_PATHS.metrics)).toBe(200);

    const t0 = performance.now();
    expect(podman(['kill', '--signal', 'TERM', id]).status).toBe(0);
    const waited = podman(['wait', id], STOP_BOUND_MS + 30_000);
    const ms = performance.now() - t0;
    expect(waited.stdout.trim()).toBe('0');
    expect(ms).toBeLessThan(STOP_BOUND_MS + CONTAINER_OVERHEAD_MS);
    const logs = podman(['logs', id]);
    expect(logs.stdout + logs.stderr).toContain('"msg":"stopped"');
    expect(logs.stdout + logs.stderr).not.toContain('not stopped in time');
  }, 120_000);
});
