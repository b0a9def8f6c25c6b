import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QaWithdrawal } from '../../schemas/dedup.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import type { KafkaAcl } from '../../topology/runtime/kafka/acls.js';
import { KafkaEndpoint } from '../../topology/runtime/kafka/endpoint.js';
import { KafkaRuntime } from '../../topology/runtime/kafka/index.js';
import { readAll } from '../conformance/suite.js';
import {
  cliAsync,
  FIXTURE_ARTICLES,
  ingestAndRun,
  keptQa,
  keptValues,
  runUntilIdle,
  workspace,
} from '../e2e/helpers.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';

/**
 * The pipeline on a secured broker (deploy/kafka/secure.sh: SASL_SSL with SCRAM-SHA-512, ACLs
 * that deny by default): `kafka check` names each misconfiguration; the ACLs `kafka acls` prints
 * for the pipeline's principal, and nothing more, let `run --until-idle` classify the sample
 * articles into the same QA ids as the embedded log, on kafkajs and on rdkafka.
 */
const SECURE = fileURLToPath(new URL('../../deploy/kafka/secure.sh', import.meta.url));
const STATE = fileURLToPath(new URL('../../.deploy/kafka-secure', import.meta.url));
const SASL = 'localhost:29093';
const CA = join(STATE, 'ca.pem');
const env = { PIPELINE_PASSWORD: 'pipeline-secret', ADMIN_PASSWORD: 'admin-secret' };
// This process reads the results as the admin, its password where the config names it.
process.env.ADMIN_PASSWORD = env.ADMIN_PASSWORD;

const sasl = (username: string, passwordEnv: string, mechanism = 'SCRAM-SHA-512') => ({
  mechanism,
  username,
  password: { env: passwordEnv },
});
const tls = (caFile = CA) => ({ caFile });

let server: LlmServer;
let dir: string;
let embedded: Set<string>;

beforeAll(async () => {
  const up = spawnSync('bash', [SECURE, 'up'], { encoding: 'utf8', timeout: 180_000 });
  if (up.status !== 0) throw new Error(`secure.sh up: ${up.stderr}`);
  server = await start({ responder: pipelineResponder });
  dir = mkdtempSync(join(tmpdir(), 'bioalchemy-secured-'));
  const ws = workspace(server.url);
  await ingestAndRun(ws.config);
  embedded = new Set((await keptValues(ws.dir)).map((q) => q.candidate.id));
}, 600_000);

afterAll(async () => {
  await server?.stop();
  // The broker is this file's alone: it would otherwise share the cores with every suite after it.
  const down = spawnSync('bash', [SECURE, 'down'], { encoding: 'utf8', timeout: 120_000 });
  if (down.status !== 0) throw new Error(`secure.sh down: ${down.stderr}`);
});

/** A config file: the log on the secured broker, as `username`, with this TLS and SASL. */
function configFor(
  name: string,
  opts: { app: string; client?: string; broker?: string; kafka: object },
): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      log: `kafka://${opts.broker ?? SASL}?client=${opts.client ?? 'kafkajs'}`,
      app: opts.app,
      clickhouse: `chdb:${join(dir, `${name}-chdb`)}`,
      connection: { kafka: opts.kafka },
      llm: { baseUrl: server.url, apiKeyEnv: 'E2E_LLM_KEY', model: 'test-model' },
    }),
  );
  return file;
}

const check = (config: string) => cliAsync(['kafka', 'check', '--config', config], { env });

describe('a secured broker: SASL_SSL, ACLs deny by default', () => {
  it('kafka check names the key to fix: wrong password, unknown CA, hostname mismatch, mechanism, missing ACL (SASL and mTLS)', async () => {
    const app = `sc${randomUUID().slice(0, 6)}`;
    const cases: [string, object, string | undefined, RegExp][] = [
      [
        'wrong-password',
        { tls: tls(), sasl: sasl('pipeline', 'ADMIN_PASSWORD') },
        undefined,
        /^bioalchemy: connection\.kafka\.sasl\.password: SASL authentication failed.*invalid credentials/m,
      ],
      [
        'unknown-ca',
        { tls: tls(join(STATE, 'other-ca.pem')), sasl: sasl('pipeline', 'PIPELINE_PASSWORD') },
        undefined,
        /^bioalchemy: connection\.kafka\.tls\.caFile: /m,
      ],
      [
        'hostname-mismatch',
        { tls: tls(), sasl: sasl('pipeline', 'PIPELINE_PASSWORD') },
        '127.0.0.1:29093',
        /^bioalchemy: connection\.kafka\.tls\.verifyHostname: .*altnames/m,
      ],
      [
        'mechanism',
        { tls: tls(), sasl: sasl('pipeline', 'PIPELINE_PASSWORD', 'SCRAM-SHA-256') },
        undefined,
        /^bioalchemy: connection\.kafka\.sasl\.mechanism: /m,
      ],
      [
        'mtls-missing-acl',
        { tls: { caFile: CA, certFile: join(STATE, 'client.pem'), keyFile: join(STATE, 'client.key') } },
        'localhost:29094',
        /^bioalchemy: ACL: .*GROUP_AUTHORIZATION_FAILED/m,
      ],
      [
        'missing-acl',
        { tls: tls(), sasl: sasl('pipeline', 'PIPELINE_PASSWORD') },
        undefined,
        /^bioalchemy: ACL: .*GROUP_AUTHORIZATION_FAILED/m,
      ],
    ];
    for (const [name, kafka, broker, expected] of cases) {
      const r = await check(configFor(name, { app, kafka, ...(broker ? { broker } : {}) }));
      expect(r.code, `${name}: ${r.stdout}${r.stderr}`).toBe(1);
      expect(r.stderr, name).toMatch(expected);
      expect(r.stdout + r.stderr, name).not.toContain('pipeline-secret');
    }
  }, 300_000);

  for (const client of ['kafkajs', 'rdkafka'] as const)
    it(`${client}: with exactly the ACLs kafka acls prints, run --until-idle keeps the embedded run's QA ids`, async () => {
      const app = `sp${randomUUID().slice(0, 6)}`;
      const pipeline = configFor(`${client}-pipeline`, {
        app,
        client,
        kafka: { tls: tls(), sasl: sasl('pipeline', 'PIPELINE_PASSWORD') },
      });
      const admin = configFor(`${client}-admin`, {
        app,
        client,
        kafka: { tls: tls(), sasl: sasl('admin', 'ADMIN_PASSWORD') },
      });
      const printed = await cliAsync(
        [
          'kafka',
          'acls',
          '--principal',
          'User:pipeline',
          '--migrate',
          '--until-idle',
          '--json',
          '--config',
          pipeline,
        ],
        { env },
      );
      expect(printed.code, printed.stderr).toBe(0);
      await applyAcls(JSON.parse(printed.stdout) as KafkaAcl[]);
      const checked = await check(pipeline);
      expect(checked.code, checked.stdout + checked.stderr).toBe(0);
      expect(checked.stdout).not.toContain('DENIED');
      // The articles come in as the admin (the source side is not this role's).
      const ingest = await cliAsync(['ingest', ...FIXTURE_ARTICLES, '--config', admin], { env });
      expect(ingest.code, ingest.stderr).toBe(0);
      const run = await runUntilIdle(pipeline, { env });
      expect(run.code, run.stderr.slice(-4000)).toBe(0);
      expect(run.stdout + run.stderr).not.toContain('pipeline-secret');
      const runtime = await KafkaRuntime.open(`kafka://${SASL}?client=${client}`, {
        app,
        connection: {
          kafka: {
            tls: { caFile: CA, verifyHostname: true, insecureSkipVerify: false },
            sasl: sasl('admin', 'ADMIN_PASSWORD') as never,
          },
        },
      });
      try {
        const kept = keptQa(
          (await readAll(runtime, 'qa.classified')).map((r) => r.value as ClassifiedQa),
          (await readAll(runtime, 'qa.withdrawn')).map((r) => r.value as QaWithdrawal),
        );
        expect(embedded.size).toBeGreaterThan(0);
        expect(new Set(kept.map((q) => q.candidate.id))).toEqual(embedded);
      } finally {
        await runtime.close();
      }
    }, 600_000);
});

/**
 * Creates the ACL bindings as the admin (a super user), and returns once the broker enforces them.
 * CreateAcls is answered when the controller has committed the bindings; the broker's authorizer
 * applies them when it replays the metadata log, a moment later (longer on a loaded machine), and
 * a check in that moment is denied. DescribeAcls is answered from that same authorizer, so the
 * bindings it lists are the ones in force.
 */
async function applyAcls(acls: readonly KafkaAcl[]): Promise<void> {
  const endpoint = KafkaEndpoint.of(
    [SASL],
    {
      tls: { caFile: CA, verifyHostname: true, insecureSkipVerify: false },
      sasl: sasl('admin', 'ADMIN_PASSWORD') as never,
    },
    { env },
  );
  const admin = new kafkajs.Kafka({
    clientId: 'acls',
    ...endpoint.kafkajs(),
    logLevel: kafkajs.logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    await admin.createAcls({
      acl: acls.map((a) => ({
        resourceType: kafkajs.AclResourceTypes[a.resourceType],
        resourceName: a.name,
        resourcePatternType: kafkajs.ResourcePatternTypes[a.patternType],
        principal: a.principal,
        host: '*',
        operation: kafkajs.AclOperationTypes[a.operation],
        permissionType: kafkajs.AclPermissionTypes.ALLOW,
      })),
    });
    const key = (type: number, name: string, pattern: number, principal: string, operation: number) =>
      `${type} ${name} ${pattern} ${principal} ${operation}`;
    const wanted = acls.map((a) =>
      key(
        kafkajs.AclResourceTypes[a.resourceType],
        a.name,
        kafkajs.ResourcePatternTypes[a.patternType],
        a.principal,
        kafkajs.AclOperationTypes[a.operation],
      ),
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      const described = await admin.describeAcls({
        resourceType: kafkajs.AclResourceTypes.ANY,
        resourcePatternType: kafkajs.ResourcePatternTypes.ANY,
        operation: kafkajs.AclOperationTypes.ANY,
        permissionType: kafkajs.AclPermissionTypes.ALLOW,
      });
      const inForce = new Set(
        described.resources.flatMap((r) =>
          r.acls.map((b) =>
            key(r.resourceType, r.resourceName, r.resourcePatternType, b.principal, b.operation),
          ),
        ),
      );
      const missing = wanted.filter((w) => !inForce.has(w));
      if (missing.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(`ACL bindings not in force after 30 s: ${missing.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.disconnect();
  }
}
