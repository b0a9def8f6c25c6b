import { z } from 'zod';

/**
 * Where a secret is read: an environment variable or a file (a mounted Secret). The value itself is
 * never in config, so a config file, `config show` and a chart's values can be printed safely.
 */
export const SecretSource = z
  .object({
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe('the environment variable holding the secret'),
    file: z
      .string()
      .min(1)
      .optional()
      .describe('the file holding the secret (one trailing newline is dropped)'),
  })
  .strict()
  .refine((s) => (s.env === undefined) !== (s.file === undefined), {
    error: 'name the secret by exactly one of env or file (the value itself never goes in config)',
  });
export type SecretSource = z.infer<typeof SecretSource>;

const File = z.string().min(1);

export const KafkaTls = z
  .object({
    caFile: File.optional().describe(
      "PEM bundle of the CAs that signed the brokers' certificates; unset: the system's CAs",
    ),
    certFile: File.optional().describe('PEM client certificate (mutual TLS), with keyFile'),
    keyFile: File.optional().describe('PEM private key of certFile'),
    keyPassphrase: SecretSource.optional().describe("the private key's passphrase, where it has one"),
    verifyHostname: z
      .boolean()
      .default(true)
      .describe("check that the broker's certificate names the host connected to"),
    insecureSkipVerify: z
      .boolean()
      .default(false)
      .describe('accept any broker certificate (testing only: a warning is logged at every start)'),
  })
  .strict()
  .refine((t) => (t.certFile === undefined) === (t.keyFile === undefined), {
    error: 'a client certificate needs both certFile and keyFile',
    path: ['keyFile'],
  })
  .refine((t) => t.keyPassphrase === undefined || t.keyFile !== undefined, {
    error: 'keyPassphrase applies to keyFile, which is not set',
    path: ['keyPassphrase'],
  });
export type KafkaTls = z.infer<typeof KafkaTls>;

export const PasswordMechanism = z.enum(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']);

export const KafkaSasl = z.discriminatedUnion('mechanism', [
  z
    .object({
      mechanism: PasswordMechanism.describe('PLAIN (an API key), SCRAM-SHA-256 or SCRAM-SHA-512'),
      username: z.string().min(1).describe('the user name, or the API key'),
      password: SecretSource.describe('the password, or the API secret'),
    })
    .strict(),
  z
    .object({
      mechanism: z.literal('OAUTHBEARER').describe('OAuth 2 bearer tokens by the client-credentials grant'),
      tokenEndpoint: z.url({ protocol: /^https?$/ }).describe("the identity provider's token endpoint"),
      clientId: z.string().min(1),
      clientSecret: SecretSource,
      scope: z.string().min(1).optional().describe('the scope asked for; unset: the provider default'),
    })
    .strict(),
]);
export type KafkaSasl = z.infer<typeof KafkaSasl>;

export const KafkaSecurity = z
  .object({
    tls: KafkaTls.optional().describe('TLS to the brokers; unset: plaintext'),
    sasl: KafkaSasl.optional().describe('SASL authentication; unset: none (or the client certificate)'),
  })
  .strict();
export type KafkaSecurity = z.infer<typeof KafkaSecurity>;

export const RegistryConnection = z
  .object({
    caFile: File.optional().describe("PEM bundle of the CAs that signed the registry's certificate"),
    basicAuth: z
      .object({
        username: z.string().min(1).describe('the user name, or the API key'),
        password: SecretSource.describe('the password, or the API secret'),
      })
      .strict()
      .optional(),
    bearerToken: SecretSource.optional().describe('a static bearer token'),
  })
  .strict()
  .refine((r) => r.basicAuth === undefined || r.bearerToken === undefined, {
    error: 'one of basicAuth or bearerToken',
    path: ['bearerToken'],
  });
export type RegistryConnection = z.infer<typeof RegistryConnection>;

export const ClickHouseConnection = z
  .object({
    caFile: File.optional().describe("PEM bundle of the CAs that signed the server's certificate (https)"),
    password: SecretSource.optional().describe(
      "the user's password; unset: the environment variable CLICKHOUSE_PASSWORD where set, else none",
    ),
  })
  .strict();
export type ClickHouseConnection = z.infer<typeof ClickHouseConnection>;

/** How the log, the registry and ClickHouse are reached: TLS, credentials, each secret by name. */
export const Connection = z
  .object({
    kafka: KafkaSecurity.default({}).describe('the brokers of a kafka:// log'),
    registry: RegistryConnection.optional().describe('the Schema Registry the log URL names'),
    clickhouse: ClickHouseConnection.default({}).describe('a ClickHouse server (http(s)://)'),
  })
  .strict();
export type Connection = z.infer<typeof Connection>;
