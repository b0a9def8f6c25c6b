import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { httpClientOptions } from '../../analytics/clickhouse.js';
import { Config, formatIssues } from '../../schemas/config.js';
import type { KafkaSecurity } from '../../schemas/connection.js';
import { parseKafkaUrl } from '../../topology/runtime/kafka/config.js';
import { KafkaEndpoint, skipHostnameCheck } from '../../topology/runtime/kafka/endpoint.js';
import { registryClientConfig } from '../../topology/runtime/kafka/registry-client.js';
import { Secret } from '../../topology/secret.js';

const ALL_FEATURES = ['ssl', 'sasl', 'sasl_plain', 'sasl_scram', 'sasl_oauthbearer', 'oidc'];
const SECRET = 's3cr3t-Value-never-printed';
const ENV = {
  KAFKA_PASSWORD: SECRET,
  KAFKA_API_SECRET: SECRET,
  AIVEN_KAFKA_PASSWORD: SECRET,
  REDPANDA_PASSWORD: SECRET,
  OIDC_SECRET: SECRET,
  SCHEMA_REGISTRY_API_SECRET: SECRET,
};

/** Real files for every path a shape names: kafkajs is given their text, librdkafka their paths. */
const dir = mkdtempSync(join(tmpdir(), 'kafka-connection-'));
const files = new Map<string, string>();
function fileFor(path: string): string {
  let local = files.get(path);
  if (!local) {
    local = join(dir, `${files.size}-${path.split('/').pop()}`);
    writeFileSync(local, path === '/run/secrets/msk-password' ? `${SECRET}\n` : `PEM of ${path}\n`);
    files.set(path, local);
  }
  return local;
}
const pem = (path: string) => readFileSync(fileFor(path), 'utf8');

/** The security section with each file path replaced by its local file. */
function localised(security: KafkaSecurity): KafkaSecurity {
  const tls = security.tls && {
    ...security.tls,
    ...(security.tls.caFile ? { caFile: fileFor(security.tls.caFile) } : {}),
    ...(security.tls.certFile ? { certFile: fileFor(security.tls.certFile) } : {}),
    ...(security.tls.keyFile ? { keyFile: fileFor(security.tls.keyFile) } : {}),
  };
  const sasl =
    security.sasl && 'password' in security.sasl && security.sasl.password.file
      ? { ...security.sasl, password: { file: fileFor(security.sasl.password.file) } }
      : security.sasl;
  return { ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) };
}

interface Shape {
  readonly name: string;
  readonly config: unknown;
  readonly kafkajs: Record<string, unknown>;
  readonly rdkafka: Record<string, unknown>;
}

const VERIFIED = {
  'enable.ssl.certificate.verification': true,
  'ssl.endpoint.identification.algorithm': 'https',
};

/** Each config shape and what each client gets: the README's examples, then the rest of the schema. */
const SHAPES: Shape[] = [
  {
    name: 'confluent-cloud',
    config: null,
    kafkajs: {
      brokers: ['pkc-41wq6.eu-west-2.aws.confluent.cloud:9092'],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'plain', username: 'KAFKA_API_KEY', password: SECRET },
    },
    rdkafka: {
      'metadata.broker.list': 'pkc-41wq6.eu-west-2.aws.confluent.cloud:9092',
      'security.protocol': 'sasl_ssl',
      ...VERIFIED,
      'sasl.mechanisms': 'PLAIN',
      'sasl.username': 'KAFKA_API_KEY',
      'sasl.password': SECRET,
    },
  },
  {
    name: 'amazon-msk-scram',
    config: null,
    kafkajs: {
      brokers: [
        'b-1.bioalchemy.x1y2z3.c2.kafka.eu-west-1.amazonaws.com:9096',
        'b-2.bioalchemy.x1y2z3.c2.kafka.eu-west-1.amazonaws.com:9096',
      ],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-512', username: 'bioalchemy', password: SECRET },
    },
    rdkafka: {
      'metadata.broker.list':
        'b-1.bioalchemy.x1y2z3.c2.kafka.eu-west-1.amazonaws.com:9096,b-2.bioalchemy.x1y2z3.c2.kafka.eu-west-1.amazonaws.com:9096',
      'security.protocol': 'sasl_ssl',
      ...VERIFIED,
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': 'bioalchemy',
      'sasl.password': SECRET,
    },
  },
  {
    name: 'aiven-mtls',
    config: null,
    kafkajs: {
      brokers: ['kafka-bioalchemy-project.aivencloud.com:12692'],
      ssl: {
        rejectUnauthorized: true,
        ca: pem('/etc/bioalchemy/aiven/ca.pem'),
        cert: pem('/etc/bioalchemy/aiven/service.cert'),
        key: pem('/etc/bioalchemy/aiven/service.key'),
      },
    },
    rdkafka: {
      'metadata.broker.list': 'kafka-bioalchemy-project.aivencloud.com:12692',
      'security.protocol': 'ssl',
      'ssl.ca.location': fileFor('/etc/bioalchemy/aiven/ca.pem'),
      'ssl.certificate.location': fileFor('/etc/bioalchemy/aiven/service.cert'),
      'ssl.key.location': fileFor('/etc/bioalchemy/aiven/service.key'),
      ...VERIFIED,
    },
  },
  {
    name: 'aiven-scram',
    config: null,
    kafkajs: {
      brokers: ['kafka-bioalchemy-project.aivencloud.com:12699'],
      ssl: { rejectUnauthorized: true, ca: pem('/etc/bioalchemy/aiven/ca.pem') },
      sasl: { mechanism: 'scram-sha-256', username: 'avnadmin', password: SECRET },
    },
    rdkafka: {
      'metadata.broker.list': 'kafka-bioalchemy-project.aivencloud.com:12699',
      'security.protocol': 'sasl_ssl',
      'ssl.ca.location': fileFor('/etc/bioalchemy/aiven/ca.pem'),
      ...VERIFIED,
      'sasl.mechanisms': 'SCRAM-SHA-256',
      'sasl.username': 'avnadmin',
      'sasl.password': SECRET,
    },
  },
  {
    name: 'redpanda-cloud',
    config: null,
    kafkajs: {
      brokers: ['seed-0a1b2c3d.d1e2f3g4.fmc.prd.cloud.redpanda.com:9092'],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-256', username: 'bioalchemy', password: SECRET },
    },
    rdkafka: {
      'metadata.broker.list': 'seed-0a1b2c3d.d1e2f3g4.fmc.prd.cloud.redpanda.com:9092',
      'security.protocol': 'sasl_ssl',
      ...VERIFIED,
      'sasl.mechanisms': 'SCRAM-SHA-256',
      'sasl.username': 'bioalchemy',
      'sasl.password': SECRET,
    },
  },
  {
    name: 'plaintext',
    config: { log: 'kafka://k:9092' },
    kafkajs: { brokers: ['k:9092'] },
    rdkafka: { 'metadata.broker.list': 'k:9092', 'security.protocol': 'plaintext' },
  },
  {
    name: 'scram over plaintext',
    config: {
      log: 'kafka://k:9092',
      connection: {
        kafka: { sasl: { mechanism: 'SCRAM-SHA-256', username: 'u', password: { env: 'KAFKA_PASSWORD' } } },
      },
    },
    kafkajs: { brokers: ['k:9092'], sasl: { mechanism: 'scram-sha-256', username: 'u', password: SECRET } },
    rdkafka: {
      'metadata.broker.list': 'k:9092',
      'security.protocol': 'sasl_plaintext',
      'sasl.mechanisms': 'SCRAM-SHA-256',
      'sasl.username': 'u',
      'sasl.password': SECRET,
    },
  },
  {
    name: 'tls without hostname verification, key with a passphrase',
    config: {
      log: 'kafka://10.0.0.5:9093',
      connection: {
        kafka: {
          tls: {
            caFile: '/ca.pem',
            certFile: '/client.pem',
            keyFile: '/client.key',
            keyPassphrase: { env: 'KAFKA_PASSWORD' },
            verifyHostname: false,
          },
        },
      },
    },
    kafkajs: {
      brokers: ['10.0.0.5:9093'],
      ssl: {
        rejectUnauthorized: true,
        ca: pem('/ca.pem'),
        cert: pem('/client.pem'),
        key: pem('/client.key'),
        passphrase: SECRET,
        checkServerIdentity: skipHostnameCheck,
      },
    },
    rdkafka: {
      'metadata.broker.list': '10.0.0.5:9093',
      'security.protocol': 'ssl',
      'ssl.ca.location': fileFor('/ca.pem'),
      'ssl.certificate.location': fileFor('/client.pem'),
      'ssl.key.location': fileFor('/client.key'),
      'ssl.key.password': SECRET,
      'enable.ssl.certificate.verification': true,
      'ssl.endpoint.identification.algorithm': 'none',
    },
  },
  {
    name: 'insecure tls',
    config: { log: 'kafka://k:9093', connection: { kafka: { tls: { insecureSkipVerify: true } } } },
    kafkajs: {
      brokers: ['k:9093'],
      ssl: { rejectUnauthorized: false, checkServerIdentity: skipHostnameCheck },
    },
    rdkafka: {
      'metadata.broker.list': 'k:9093',
      'security.protocol': 'ssl',
      'enable.ssl.certificate.verification': false,
      'ssl.endpoint.identification.algorithm': 'none',
    },
  },
  {
    name: 'oauthbearer (oidc client credentials)',
    config: {
      log: 'kafka://k:9093',
      connection: {
        kafka: {
          tls: {},
          sasl: {
            mechanism: 'OAUTHBEARER',
            tokenEndpoint: 'https://idp.example/oauth2/token',
            clientId: 'bioalchemy',
            clientSecret: { env: 'OIDC_SECRET' },
            scope: 'kafka',
          },
        },
      },
    },
    kafkajs: {
      brokers: ['k:9093'],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'oauthbearer', oauthBearerProvider: expect.any(Function) },
    },
    rdkafka: {
      'metadata.broker.list': 'k:9093',
      'security.protocol': 'sasl_ssl',
      ...VERIFIED,
      'sasl.mechanisms': 'OAUTHBEARER',
      'sasl.oauthbearer.method': 'oidc',
      'sasl.oauthbearer.token.endpoint.url': 'https://idp.example/oauth2/token',
      'sasl.oauthbearer.client.id': 'bioalchemy',
      'sasl.oauthbearer.client.secret': SECRET,
      'sasl.oauthbearer.scope': 'kafka',
    },
  },
];

/** The README's connection examples, by name: the test and the README cannot drift apart. */
function readmeExamples(): Map<string, unknown> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const out = new Map<string, unknown>();
  for (const m of readme.matchAll(/<!-- connection-example: ([a-z0-9-]+) -->\n```json\n([\s\S]*?)```/g))
    out.set(m[1]!, JSON.parse(m[2]!));
  return out;
}

function endpointOf(raw: unknown, opts: { log?: pino.Logger } = {}): KafkaEndpoint {
  const config = Config.parse(raw);
  return KafkaEndpoint.of(parseKafkaUrl(config.log).brokers, localised(config.connection.kafka), {
    env: ENV,
    ...opts,
  });
}

describe('the connection: one config, rendered for kafkajs and librdkafka', () => {
  const examples = readmeExamples();

  it("the README's examples are exactly the table's", () => {
    expect([...examples.keys()].sort()).toEqual(
      SHAPES.filter((s) => s.config === null)
        .map((s) => s.name)
        .sort(),
    );
  });

  for (const shape of SHAPES)
    it(`${shape.name}: the schema takes it, each client gets its options`, () => {
      const endpoint = endpointOf(shape.config ?? examples.get(shape.name));
      expect(endpoint.kafkajs()).toEqual(shape.kafkajs);
      expect(endpoint.rdkafka(ALL_FEATURES)).toEqual(shape.rdkafka);
    });

  it('the Confluent Cloud registry gets the API key and secret as basic auth', () => {
    const config = Config.parse(examples.get('confluent-cloud'));
    const url = parseKafkaUrl(config.log);
    expect(registryClientConfig(url.registry!, config.connection.registry, ENV)).toEqual({
      baseURLs: ['https://psrc-4kk0p.eu-west-2.aws.confluent.cloud'],
      basicAuthCredentials: { credentialsSource: 'USER_INFO', userInfo: `SR_API_KEY:${SECRET}` },
    });
  });

  it('a registry bearer token and CA; ClickHouse over https with a CA and a password from a file', () => {
    const ca = fileFor('/registry-ca.pem');
    const registry = registryClientConfig(
      'https://sr:8081',
      { caFile: ca, bearerToken: { env: 'KAFKA_PASSWORD' } },
      ENV,
    );
    expect(registry.createAxiosDefaults?.headers).toEqual({ Authorization: `Bearer ${SECRET}` });
    expect(registry.createAxiosDefaults?.httpsAgent.options.ca).toBe(pem('/registry-ca.pem'));
    const target = { backend: 'http', origin: 'https://ch:8443', username: 'u', database: 'db' } as const;
    const options = httpClientOptions(
      target,
      { connection: { caFile: ca, password: { file: fileFor('/run/secrets/msk-password') } } },
      {},
    );
    expect(options).toMatchObject({ url: 'https://ch:8443', password: SECRET });
    expect(options.tls).toEqual({ ca_cert: Buffer.from(pem('/registry-ca.pem')) });
    expect(httpClientOptions(target, {}, { CLICKHOUSE_PASSWORD: 'p' }).password).toBe('p');
    expect(() =>
      httpClientOptions({ ...target, origin: 'http://ch:8123' }, { connection: { caFile: ca } }),
    ).toThrow(/^connection\.clickhouse\.caFile: applies to a ClickHouse server over https/);
  });

  it('a librdkafka build without a feature the config needs is an error naming the key', () => {
    const scram = endpointOf(examples.get('amazon-msk-scram'));
    expect(() => scram.rdkafka(['ssl', 'sasl_plain'])).toThrow(
      /^connection\.kafka\.sasl\.mechanism: this librdkafka .* built without "sasl_scram"/,
    );
    expect(() => endpointOf(examples.get('aiven-mtls')).rdkafka(['sasl_scram'])).toThrow(
      /^connection\.kafka\.tls: .* without "ssl"/,
    );
    const oauth = endpointOf(SHAPES.find((s) => s.name.startsWith('oauthbearer'))!.config);
    expect(() => oauth.rdkafka(['ssl', 'sasl_oauthbearer'])).toThrow(/without "oidc"/);
  });

  it('insecureSkipVerify logs a warning every time an endpoint is built', () => {
    const lines: string[] = [];
    const log = pino({}, { write: (l: string) => lines.push(l) });
    const config = SHAPES.find((s) => s.name === 'insecure tls')!.config;
    endpointOf(config, { log });
    endpointOf(config, { log });
    expect(lines.filter((l) => l.includes('insecureSkipVerify'))).toHaveLength(2);
  });

  it('the config refuses a secret written in it, and names an unknown key by its path', () => {
    const issues = (raw: unknown) => {
      const r = Config.safeParse(raw);
      return r.success ? '' : formatIssues(r.error);
    };
    expect(
      issues({
        log: 'kafka://k:1',
        connection: { kafka: { sasl: { mechanism: 'PLAIN', username: 'u', password: 'hunter2' } } },
      }),
    ).toMatch(/^connection\.kafka\.sasl\.password: /);
    expect(issues({ log: 'kafka://k:1', connection: { kafka: { tls: { caFiles: '/x' } } } })).toBe(
      'connection.kafka.tls: Unrecognized key: "caFiles"',
    );
    expect(issues({ connection: { kafka: { tls: {} } } })).toBe(
      'connection.kafka: applies to a kafka:// log',
    );
    expect(issues({ log: 'kafka://k:1', connection: { registry: { caFile: '/x' } } })).toMatch(
      /^connection\.registry: applies to the Schema Registry the log URL names/,
    );
  });

  it('a secret not set is an error naming its key and source, never a value', () => {
    expect(() => Secret.read({ env: 'NOT_SET_HERE' }, 'connection.kafka.sasl.password', {})).toThrow(
      'connection.kafka.sasl.password: the environment variable NOT_SET_HERE is not set',
    );
    expect(() => Secret.read({ file: join(dir, 'none') }, 'connection.registry.bearerToken')).toThrow(
      /^connection\.registry\.bearerToken: cannot read .*: ENOENT$/,
    );
  });
});

/** Any security section the schema takes, its secrets by env (the one secret value below). */
const securityArb: fc.Arbitrary<KafkaSecurity> = fc.record(
  {
    tls: fc.record(
      {
        caFile: fc.constant('/ca.pem'),
        keyPassphrase: fc.constant({ env: 'KAFKA_PASSWORD' }),
        verifyHostname: fc.boolean(),
        insecureSkipVerify: fc.boolean(),
      },
      { requiredKeys: ['verifyHostname', 'insecureSkipVerify'] },
    ),
    sasl: fc.oneof(
      fc.record({
        mechanism: fc.constantFrom('PLAIN' as const, 'SCRAM-SHA-256' as const, 'SCRAM-SHA-512' as const),
        username: fc.stringMatching(/^[a-z]{1,8}$/),
        password: fc.constant({ env: 'KAFKA_PASSWORD' }),
      }),
      fc.record({
        mechanism: fc.constant('OAUTHBEARER' as const),
        tokenEndpoint: fc.constant('https://idp.example/token'),
        clientId: fc.stringMatching(/^[a-z]{1,8}$/),
        clientSecret: fc.constant({ env: 'KAFKA_PASSWORD' }),
      }),
    ),
  },
  { requiredKeys: [] },
);

describe('no secret in any printed form', () => {
  it('every shape renders for both clients, and its printed, logged and serialised forms hold no secret', () => {
    fc.assert(
      fc.property(securityArb, fc.stringMatching(/^[A-Za-z0-9]{12,24}$/), (raw, secret) => {
        const security = {
          ...raw,
          ...(raw.tls ? { tls: { ...raw.tls, certFile: '/c.pem', keyFile: '/k.pem' } } : {}),
        };
        const parsed = Config.parse({ log: 'kafka://k:9093', connection: { kafka: security } });
        const lines: string[] = [];
        const log = pino({}, { write: (l: string) => lines.push(l) });
        const endpoint = KafkaEndpoint.of(['k:9093'], localised(parsed.connection.kafka), {
          env: { KAFKA_PASSWORD: secret },
          log,
        });
        log.info({ endpoint }, 'connecting to Kafka');
        const kafkajs = endpoint.kafkajs();
        const rdkafka = endpoint.rdkafka(ALL_FEATURES);
        // The clients get it...
        const given = JSON.stringify(rdkafka) + JSON.stringify(kafkajs);
        if (parsed.connection.kafka.sasl || parsed.connection.kafka.tls?.keyPassphrase)
          expect(given).toContain(secret);
        // ...and nothing printable holds it: config show, logs, inspect, JSON, describe.
        for (const printed of [
          JSON.stringify(parsed, null, 2),
          lines.join(''),
          inspect(endpoint, { depth: 10 }),
          JSON.stringify(endpoint),
          JSON.stringify(endpoint.describe()),
        ])
          expect(printed).not.toContain(secret);
      }),
      { numRuns: 60 },
    );
  });
});
