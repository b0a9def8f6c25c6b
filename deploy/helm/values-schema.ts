// The Helm chart's values.schema.json, made from the project's zod config schema (one source): the
// chart's `config` is the config file less `log` and `clickhouse`, which the chart sets from
// `kafka` and `clickhouse`. Helm checks values against it at install, lint and template.
//   npx tsx deploy/helm/values-schema.ts          writes deploy/helm/bioalchemy/values.schema.json
// test/deploy/helm.test.ts fails when the file differs from what this makes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Config } from '../../schemas/config.js';
import { PasswordMechanism } from '../../schemas/connection.js';

export const VALUES_SCHEMA_PATH = fileURLToPath(new URL('./bioalchemy/values.schema.json', import.meta.url));

const secretRef = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'key'],
  properties: { name: { type: 'string' }, key: { type: 'string', minLength: 1 } },
};
const int = (minimum: number) => ({ type: 'integer', minimum });
const anyObject = { type: 'object' };

const role = {
  type: 'object',
  additionalProperties: false,
  required: ['enabled', 'processors', 'replicas', 'autoscaling', 'hpa', 'pdb', 'resources', 'service'],
  properties: {
    enabled: { type: 'boolean' },
    processors: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string' } },
    replicas: int(0),
    autoscaling: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'minReplicas', 'maxReplicas', 'lagThreshold'],
      properties: {
        enabled: { type: 'boolean' },
        minReplicas: int(0),
        maxReplicas: int(1),
        idleReplicas: int(0),
        pollingInterval: int(1),
        cooldownPeriod: int(0),
        lagThreshold: int(1),
        offsetResetPolicy: { enum: ['earliest', 'latest'] },
      },
    },
    hpa: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'minReplicas', 'maxReplicas'],
      properties: {
        enabled: { type: 'boolean' },
        minReplicas: int(1),
        maxReplicas: int(1),
        targetCPUUtilizationPercentage: { type: 'integer', minimum: 1, maximum: 100 },
      },
    },
    pdb: {
      type: 'object',
      additionalProperties: false,
      properties: { enabled: { type: 'boolean' }, maxUnavailable: { type: ['integer', 'string'] } },
    },
    resources: anyObject,
    service: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { enum: ['ClusterIP', 'NodePort', 'LoadBalancer'] },
        feederPort: { type: 'integer', minimum: 1, maximum: 65535 },
        dashboardPort: { type: 'integer', minimum: 1, maximum: 65535 },
      },
    },
  },
};

/** The chart's values schema: the chart's own keys, and `config` from the zod schema. */
export function valuesSchema(): Record<string, unknown> {
  const config = z.toJSONSchema(Config, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, unknown>;
    $schema?: string;
  };
  const { log: _log, clickhouse: _clickhouse, ...properties } = config.properties;
  const { $schema: _s, ...rest } = config;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'bioalchemy chart values',
    type: 'object',
    required: ['image', 'kafka', 'clickhouse', 'llm', 'config', 'metrics', 'workers'],
    properties: {
      image: {
        type: 'object',
        additionalProperties: false,
        required: ['repository'],
        properties: {
          repository: { type: 'string', minLength: 1 },
          tag: { type: 'string' },
          pullPolicy: { enum: ['Always', 'IfNotPresent', 'Never'] },
        },
      },
      imagePullSecrets: { type: 'array' },
      nameOverride: { type: 'string' },
      fullnameOverride: { type: 'string' },
      kafka: {
        type: 'object',
        additionalProperties: false,
        required: ['bootstrapServers', 'client', 'partitions'],
        properties: {
          bootstrapServers: { type: 'string', pattern: '^$|^[^:,]+:\\d+(,[^:,]+:\\d+)*$' },
          client: { enum: ['kafkajs', 'rdkafka'] },
          schemaRegistry: { type: 'string', pattern: '^$|^https?://' },
          compatibility: {
            enum: [
              'BACKWARD',
              'BACKWARD_TRANSITIVE',
              'FORWARD',
              'FORWARD_TRANSITIVE',
              'FULL',
              'FULL_TRANSITIVE',
              'NONE',
            ],
          },
          partitions: int(1),
          tls: {
            type: 'object',
            additionalProperties: false,
            properties: {
              enabled: { type: 'boolean' },
              secretName: { type: 'string' },
              caKey: { type: 'string' },
              certKey: { type: 'string' },
              keyKey: { type: 'string' },
              verifyHostname: { type: 'boolean' },
            },
          },
          sasl: {
            type: 'object',
            additionalProperties: false,
            properties: {
              mechanism: { enum: ['', ...PasswordMechanism.options] },
              username: { type: 'string' },
              passwordSecret: secretRef,
            },
          },
        },
      },
      clickhouse: {
        type: 'object',
        additionalProperties: false,
        required: ['url'],
        properties: {
          url: { type: 'string', pattern: '^$|^https?://' },
          passwordSecret: secretRef,
        },
      },
      llm: {
        type: 'object',
        additionalProperties: false,
        properties: { apiKeySecret: secretRef },
      },
      secretEnv: {
        type: 'object',
        propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        additionalProperties: secretRef,
      },
      config: { ...rest, properties, description: 'the config file less log and clickhouse' },
      metrics: {
        type: 'object',
        additionalProperties: false,
        properties: { port: { type: 'integer', minimum: 1, maximum: 65535 } },
      },
      workers: { type: 'object', additionalProperties: role },
      livenessProbe: anyObject,
      readinessProbe: anyObject,
      terminationGracePeriodSeconds: int(10),
      migrations: {
        type: 'object',
        additionalProperties: false,
        properties: {
          enabled: { type: 'boolean' },
          backoffLimit: int(0),
          activeDeadlineSeconds: int(1),
        },
      },
      serviceMonitor: {
        type: 'object',
        additionalProperties: false,
        properties: { enabled: { type: 'boolean' }, interval: { type: 'string' }, labels: anyObject },
      },
      podSecurityContext: anyObject,
      securityContext: anyObject,
      tmpSizeLimit: { type: 'string' },
      dataSizeLimit: { type: 'string' },
      podAnnotations: anyObject,
      podLabels: anyObject,
      nodeSelector: anyObject,
      tolerations: { type: 'array' },
      affinity: anyObject,
      serviceAccountName: { type: 'string' },
      global: anyObject,
    },
    additionalProperties: false,
  };
}

export function valuesSchemaText(): string {
  return `${JSON.stringify(valuesSchema(), null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(VALUES_SCHEMA_PATH, valuesSchemaText());
  process.stdout.write(`${VALUES_SCHEMA_PATH}\n`);
}
