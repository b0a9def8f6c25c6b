import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_PATHS } from '../../server/probes.js';
import { cli, cliAsync } from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { clickHouseServer, type ServerDatabase } from '../services/clickhouse-server.js';
import { until } from '../until.js';
import { PODMAN, WORKER_IMAGE } from './podman.js';

const COMPOSE = fileURLToPath(new URL('../../deploy/compose/', import.meta.url));
const PODMAN_COMPOSE = fileURLToPath(new URL('../../deploy/tools/podman-compose.sh', import.meta.url));
const ARTICLES = fileURLToPath(new URL('../../examples/articles', import.meta.url));
const PROJECT = `bioalchemy-ci-${process.pid}`;
/** The ports compose.loopback.yaml gives the two workers' probes and the feeder. */
const PIPELINE_METRICS = 19465;
const SERVE_METRICS = 19466;
const FEEDER = 18787;

// The compose file's own services (migrate, pipeline, serve), from the image, started by
// podman-compose with the loopback override against deploy/services.sh's Kafka, ClickHouse and
// registry, and this process's test LLM server.
describe('compose: the project services up with podman-compose (compose.loopback.yaml)', () => {
  let server: LlmServer;
  let compose: (args: string[]) => { status: number | null; out: string };
  const ch = clickHouseServer();
  let db: ServerDatabase;
  let config: string;

  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
    db = await ch.freshDatabase('compose');
    const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-compose-'));
    chmodSync(dir, 0o755);
    config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        app: `compose-${process.pid}`,
        log: 'kafka://127.0.0.1:19092?client=kafkajs&registry=http://127.0.0.1:18081/apis/ccompat/v6',
        clickhouse: db.url,
        llm: { baseUrl: server.url, model: 'test-model', apiKeyEnv: 'OPENAI_API_KEY' },
      }),
    );
    chmodSync(config, 0o644);
    const bin = spawnSync('bash', [PODMAN_COMPOSE], { encoding: 'utf8', timeout: 300_000 });
    if (bin.status !== 0) throw new Error(`podman-compose: ${bin.stderr}`);
    const podmanCompose = bin.stdout.trim().split('\n').at(-1)!;
    compose = (args) => {
      // podman with the project's settings (deploy/image/podman.sh exports them), then podman-compose.
      const r = spawnSync(
        'bash',
        [
          '-c',
          `source "${PODMAN}" && exec "$0" -p ${PROJECT} -f compose.yaml -f compose.loopback.yaml "$@"`,
          podmanCompose,
          ...args,
        ],
        {
          cwd: COMPOSE,
          encoding: 'utf8',
          timeout: 300_000,
          env: {
            ...process.env,
            BIOALCHEMY_IMAGE: WORKER_IMAGE,
            BIOALCHEMY_CONFIG: config,
            // What the loopback override passes on from the shell, as a dev's own key.
            OPENAI_API_KEY: 'test-key',
          },
        },
      );
      return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
    };
  }, 600_000);

  afterAll(async () => {
    compose?.(['down', '--timeout', '15']);
    await server?.stop();
    await db?.dispose();
    await ch.close();
  }, 120_000);

  it('migrate completes, then the workers come up ready; the feeder answers', async () => {
    const up = compose(['up', '-d', 'migrate', 'pipeline', 'serve']);
    expect(up.status, up.out).toBe(0);
    const status = async (port: number, path: string) => {
      try {
        return (await fetch(`http://127.0.0.1:${port}${path}`)).status;
      } catch {
        return 0;
      }
    };
    // Not ready in time: the error carries what the containers said.
    const ready = (what: string, port: number) =>
      until(
        what,
        async () => ((await status(port, PROBE_PATHS.ready)) === 200 ? true : undefined),
        180_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${compose(['ps']).out}\n${compose(['logs', '--tail', '40']).out}`);
      });
    await ready('the pipeline worker ready', PIPELINE_METRICS);
    await ready('the serve worker ready', SERVE_METRICS);
    expect(await status(FEEDER, '/healthz')).toBe(200);
    const ps = compose(['ps', '--format', '{{.Names}} {{.Status}}']);
    expect(ps.out).toMatch(/migrate.*Exited \(0\)/);
    // Migrate made ClickHouse's tables in the test's own database.
    const tables = await ch.admin.query({ query: `SHOW TABLES FROM ${db.name}`, format: 'JSONEachRow' });
    expect(((await tables.json()) as { name: string }[]).map((t) => t.name)).toContain('schema_migrations');
  }, 600_000);

  it("articles ingested from outside come out classified by compose's pipeline worker", async () => {
    const ingest = cli(['ingest', ARTICLES, '--config', config]);
    expect(ingest.status, ingest.stderr).toBe(0);
    await until(
      'classified QA on qa.classified',
      async () => {
        const r = await cliAsync(['consume', 'qa.classified', '--config', config]);
        return r.code === 0 && r.stdout.trim() ? true : undefined;
      },
      180_000,
    );
  }, 300_000);
});
