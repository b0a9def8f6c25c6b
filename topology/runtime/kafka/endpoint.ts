import type { ConnectionOptions } from 'node:tls';
import { inspect } from 'node:util';
import type kafkajs from 'kafkajs';
import rdkafka from 'node-rdkafka';
import type { Logger } from 'pino';
import type { KafkaSasl, KafkaSecurity } from '../../../schemas/connection.js';
import { readPem, Secret } from '../../secret.js';
import { ClientCredentialsTokens } from './oauth.js';

/** librdkafka properties, as node-rdkafka takes them. */
export type RdkafkaProperties = Record<string, string | boolean | number>;

/** What kafkajs takes of one endpoint: its brokers and how to reach them. */
export type KafkajsEndpoint = Pick<kafkajs.KafkaConfig, 'brokers' | 'ssl' | 'sasl'>;

/** kafkajs's TLS check of the broker's host name, turned off (connection.kafka.tls.verifyHostname: false). */
export const skipHostnameCheck = (): undefined => undefined;

const KAFKAJS_MECHANISM = {
  PLAIN: 'plain',
  'SCRAM-SHA-256': 'scram-sha-256',
  'SCRAM-SHA-512': 'scram-sha-512',
} as const;

/** TLS material read at start: kafkajs takes contents, librdkafka the files' paths. */
interface TlsMaterial {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly passphrase?: Secret;
}

type SaslCredentials =
  | {
      readonly mechanism: keyof typeof KAFKAJS_MECHANISM;
      readonly username: string;
      readonly password: Secret;
    }
  | {
      readonly mechanism: 'OAUTHBEARER';
      readonly tokenEndpoint: string;
      readonly clientId: string;
      readonly clientSecret: Secret;
      readonly scope?: string;
      readonly tokens: ClientCredentialsTokens;
    };

export interface EndpointOptions {
  readonly log?: Logger;
  /** Where secrets named by `env` are read (default: this process's environment). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * The log's connection: the brokers and how to reach them (connection.kafka: TLS, SASL), built
 * once from config, its files and secrets read once, and rendered for each client that opens a
 * connection: kafkajs (the runtime's admin and producer, its tasks) and librdkafka (the rdkafka
 * tasks, the partition reader, the readable wait). One schema, two renderings, in this module only.
 */
export class KafkaEndpoint {
  private constructor(
    readonly brokers: readonly string[],
    private readonly security: KafkaSecurity,
    private readonly tls: TlsMaterial | null,
    private readonly sasl: SaslCredentials | null,
  ) {}

  static of(
    brokers: readonly string[],
    security: KafkaSecurity = {},
    opts: EndpointOptions = {},
  ): KafkaEndpoint {
    const { tls, sasl } = security;
    if (tls?.insecureSkipVerify)
      opts.log?.warn(
        "connection.kafka.tls.insecureSkipVerify: the brokers' certificates are not verified; anyone on the path can read and change the traffic",
      );
    const material: TlsMaterial | null = tls
      ? {
          ca: tls.caFile && readPem(tls.caFile, 'connection.kafka.tls.caFile'),
          cert: tls.certFile && readPem(tls.certFile, 'connection.kafka.tls.certFile'),
          key: tls.keyFile && readPem(tls.keyFile, 'connection.kafka.tls.keyFile'),
          passphrase:
            tls.keyPassphrase &&
            Secret.read(tls.keyPassphrase, 'connection.kafka.tls.keyPassphrase', opts.env),
        }
      : null;
    return new KafkaEndpoint(brokers, security, material, sasl ? credentials(sasl, opts.env) : null);
  }

  /** The endpoint as it may be printed: brokers, protocol, mechanism and user; no secret. */
  describe(): { brokers: readonly string[]; protocol: string; mechanism?: string; username?: string } {
    const sasl = this.sasl;
    return {
      brokers: this.brokers,
      protocol: this.protocol(),
      ...(sasl ? { mechanism: sasl.mechanism } : {}),
      ...(sasl && 'username' in sasl ? { username: sasl.username } : {}),
    };
  }

  /** Logged or serialised, an endpoint is what describe() shows: never a key or a secret. */
  toJSON(): ReturnType<KafkaEndpoint['describe']> {
    return this.describe();
  }

  [inspect.custom](): ReturnType<KafkaEndpoint['describe']> {
    return this.describe();
  }

  /** librdkafka's security.protocol, which names the four combinations. */
  private protocol(): 'plaintext' | 'ssl' | 'sasl_plaintext' | 'sasl_ssl' {
    if (this.sasl) return this.tls ? 'sasl_ssl' : 'sasl_plaintext';
    return this.tls ? 'ssl' : 'plaintext';
  }

  kafkajs(): KafkajsEndpoint {
    const out: KafkajsEndpoint = { brokers: [...this.brokers] };
    const tls = this.security.tls;
    if (tls && this.tls) {
      const ssl: ConnectionOptions = { rejectUnauthorized: !tls.insecureSkipVerify };
      if (this.tls.ca) ssl.ca = this.tls.ca;
      if (this.tls.cert) ssl.cert = this.tls.cert;
      if (this.tls.key) ssl.key = this.tls.key;
      if (this.tls.passphrase) ssl.passphrase = this.tls.passphrase.reveal();
      if (!tls.verifyHostname || tls.insecureSkipVerify) ssl.checkServerIdentity = skipHostnameCheck;
      out.ssl = ssl;
    }
    const sasl = this.sasl;
    if (sasl?.mechanism === 'OAUTHBEARER')
      out.sasl = {
        mechanism: 'oauthbearer',
        oauthBearerProvider: async () => ({ value: await sasl.tokens.token() }),
      };
    else if (sasl)
      out.sasl = {
        mechanism: KAFKAJS_MECHANISM[sasl.mechanism],
        username: sasl.username,
        password: sasl.password.reveal(),
      } as kafkajs.SASLOptions;
    return out;
  }

  /**
   * librdkafka's properties for this endpoint. A librdkafka build without a feature the config
   * needs is an error naming the config key (node-rdkafka's `features`: its build's builtin.features).
   */
  rdkafka(features: readonly string[] = rdkafka.features): RdkafkaProperties {
    for (const [feature, key] of this.neededFeatures())
      if (!features.includes(feature))
        throw new Error(
          `${key}: this librdkafka (node-rdkafka ${rdkafka.librdkafkaVersion}) is built without "${feature}" ` +
            `(it has: ${features.join(', ')}); use a build with it${feature === 'oidc' ? ', or client=kafkajs for the tasks' : ''}`,
        );
    const out: RdkafkaProperties = {
      'metadata.broker.list': this.brokers.join(','),
      'security.protocol': this.protocol(),
    };
    const tls = this.security.tls;
    if (tls) {
      if (tls.caFile) out['ssl.ca.location'] = tls.caFile;
      if (tls.certFile) out['ssl.certificate.location'] = tls.certFile;
      if (tls.keyFile) out['ssl.key.location'] = tls.keyFile;
      if (this.tls?.passphrase) out['ssl.key.password'] = this.tls.passphrase.reveal();
      out['enable.ssl.certificate.verification'] = !tls.insecureSkipVerify;
      out['ssl.endpoint.identification.algorithm'] =
        tls.verifyHostname && !tls.insecureSkipVerify ? 'https' : 'none';
    }
    const sasl = this.sasl;
    if (sasl?.mechanism === 'OAUTHBEARER') {
      out['sasl.mechanisms'] = 'OAUTHBEARER';
      out['sasl.oauthbearer.method'] = 'oidc';
      out['sasl.oauthbearer.token.endpoint.url'] = sasl.tokenEndpoint;
      out['sasl.oauthbearer.client.id'] = sasl.clientId;
      out['sasl.oauthbearer.client.secret'] = sasl.clientSecret.reveal();
      if (sasl.scope) out['sasl.oauthbearer.scope'] = sasl.scope;
    } else if (sasl) {
      out['sasl.mechanisms'] = sasl.mechanism;
      out['sasl.username'] = sasl.username;
      out['sasl.password'] = sasl.password.reveal();
    }
    return out;
  }

  /** librdkafka features the config needs, each with the config key that asks for it. */
  private neededFeatures(): [string, string][] {
    const needed: [string, string][] = [];
    if (this.tls) needed.push(['ssl', 'connection.kafka.tls']);
    const mechanism = this.sasl?.mechanism;
    const key = 'connection.kafka.sasl.mechanism';
    if (mechanism === 'PLAIN') needed.push(['sasl_plain', key]);
    if (mechanism?.startsWith('SCRAM')) needed.push(['sasl_scram', key]);
    if (mechanism === 'OAUTHBEARER') needed.push(['sasl_oauthbearer', key], ['oidc', key]);
    return needed;
  }
}

function credentials(sasl: KafkaSasl, env: NodeJS.ProcessEnv | undefined): SaslCredentials {
  if (sasl.mechanism !== 'OAUTHBEARER')
    return {
      mechanism: sasl.mechanism,
      username: sasl.username,
      password: Secret.read(sasl.password, 'connection.kafka.sasl.password', env),
    };
  const clientSecret = Secret.read(sasl.clientSecret, 'connection.kafka.sasl.clientSecret', env);
  const grant = {
    tokenEndpoint: sasl.tokenEndpoint,
    clientId: sasl.clientId,
    clientSecret,
    scope: sasl.scope,
  };
  return { mechanism: 'OAUTHBEARER', ...grant, tokens: new ClientCredentialsTokens(grant) };
}
