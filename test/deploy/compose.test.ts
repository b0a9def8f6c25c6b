import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { Config } from '../../schemas/config.js';

const COMPOSE = fileURLToPath(new URL('../../deploy/compose/', import.meta.url));
const GO_TOOL = fileURLToPath(new URL('../../deploy/tools/go-tool.sh', import.meta.url));

// Compose's merge tags (!reset, !override) read as the values they carry.
const LOAD = `
import sys, json, yaml
class Loader(yaml.SafeLoader): pass
def tagged(loader, node):
    if isinstance(node, yaml.MappingNode): return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode): return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)
Loader.add_constructor('!reset', tagged)
Loader.add_constructor('!override', tagged)
print(json.dumps(yaml.load(open(sys.argv[1]), Loader=Loader)))
`;

/** A compose file as JSON (PyYAML: the machine's Python has it; no YAML parser is a dependency here). */
function load(file: string): Record<string, unknown> {
  const r = spawnSync('python3', ['-c', LOAD, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

interface Service {
  image?: string;
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  environment?: Record<string, string | number>;
  env_file?: { path: string; required: boolean }[];
  read_only?: boolean;
  user?: string;
  deploy?: { replicas: number };
  profiles?: string[];
  ulimits?: { nofile: { soft: number; hard: number } };
}

describe('the compose stack (deploy/compose)', () => {
  // biome-ignore lint/suspicious/noExplicitAny: ajv's compiled validator
  let validate: any;
  let compose: { services: Record<string, Service> };
  beforeAll(() => {
    // The Compose Specification's schema, from the compose-go module (Go module proxy), cached.
    const r = spawnSync('bash', [GO_TOOL, 'compose-spec'], { encoding: 'utf8', timeout: 300_000 });
    if (r.status !== 0) throw new Error(`compose-spec: ${r.stderr}`);
    const schema = JSON.parse(readFileSync(r.stdout.trim().split('\n').at(-1)!, 'utf8'));
    validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
    compose = load(`${COMPOSE}compose.yaml`) as typeof compose;
  }, 300_000);

  it.each(['compose.yaml', 'compose.loopback.yaml', 'compose.secured.yaml'])(
    '%s validates against the Compose Specification',
    (f) => {
      const ok = validate(load(`${COMPOSE}${f}`));
      expect(validate.errors ?? [], f).toEqual([]);
      expect(ok).toBe(true);
    },
  );

  it('the secured override: the config the project accepts, its secrets by file from compose secrets', () => {
    const raw = JSON.parse(readFileSync(`${COMPOSE}config/secured.example.json`, 'utf8'));
    const config = Config.parse(raw);
    expect(config.connection.kafka.sasl).toMatchObject({ password: { file: '/run/secrets/kafka-password' } });
    const secured = load(`${COMPOSE}compose.secured.yaml`) as {
      services: Record<string, { secrets: string[] }>;
      secrets: Record<string, { file: string }>;
    };
    for (const name of ['migrate', 'pipeline', 'serve'])
      expect(secured.services[name]!.secrets).toEqual(['kafka-ca.pem', 'kafka-password']);
    expect(`/run/secrets/${Object.keys(secured.secrets)[0]}`).toBe(config.connection.kafka.tls!.caFile);
  });

  it('the schema refuses what is not compose (the check can fail)', () => {
    expect(validate({ services: { x: { image: 'a', restart: 'sometimes', nope: 1 } } })).toBe(false);
  });

  it('Kafka runs transactions on one broker; ClickHouse has its nofile; the registry is Apicurio 3 on kafkasql', () => {
    const kafka = compose.services.kafka!.environment!;
    expect(kafka.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(kafka.KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR).toBe(1);
    expect(kafka.KAFKA_TRANSACTION_STATE_LOG_MIN_ISR).toBe(1);
    expect(compose.services.clickhouse!.ulimits!.nofile).toEqual({ soft: 262144, hard: 262144 });
    expect(compose.services.registry!.environment!.APICURIO_STORAGE_KIND).toBe('kafkasql');
    const config = JSON.parse(readFileSync(`${COMPOSE}config/compose.json`, 'utf8'));
    expect(config.log).toContain('registry=http://registry:8080/apis/ccompat/v7');
  });

  it("every service is healthchecked or waited for; the project's containers run hardened; no key in the file", () => {
    const s = compose.services;
    for (const name of ['kafka', 'registry', 'clickhouse', 'pipeline', 'serve'])
      expect(s[name]!.healthcheck, name).toBeDefined();
    expect(s.migrate!.depends_on).toEqual({
      kafka: { condition: 'service_healthy' },
      registry: { condition: 'service_healthy' },
      clickhouse: { condition: 'service_healthy' },
    });
    for (const name of ['pipeline', 'serve'])
      expect(s[name]!.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    expect(s.pipeline!.deploy!.replicas).toBe(2);
    for (const name of ['migrate', 'pipeline', 'serve', 'bioalchemy']) {
      expect(s[name]!.read_only, name).toBe(true);
      expect(s[name]!.user, name).toBe('1000:1000');
      expect(s[name]!.env_file, name).toEqual([{ path: 'llm.env', required: false }]);
    }
    expect(s.bioalchemy!.profiles).toEqual(['embedded']);
    expect(readFileSync(`${COMPOSE}compose.yaml`, 'utf8')).not.toMatch(/OPENAI_API_KEY\s*[:=]\s*\S/);
  });
});
