import { Agent } from 'node:https';
import type { ClientConfig } from '@confluentinc/schemaregistry';
import type { RegistryConnection } from '../../../schemas/connection.js';
import { readPem, Secret } from '../../secret.js';

/**
 * The Schema Registry client's config for the registry the log URL names, with the connection's
 * CA and credentials (connection.registry), secrets read where the config names them. A bearer
 * token travels as a plain Authorization header: the client's own bearerAuthCredentials ask for
 * Confluent Cloud's logical cluster and identity pool, which another registry does not have.
 */
export function registryClientConfig(
  url: string,
  connection: RegistryConnection | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ClientConfig {
  const config: ClientConfig = { baseURLs: [url] };
  if (!connection) return config;
  const { caFile, basicAuth, bearerToken } = connection;
  if (basicAuth) {
    const password = Secret.read(basicAuth.password, 'connection.registry.basicAuth.password', env);
    config.basicAuthCredentials = {
      credentialsSource: 'USER_INFO',
      userInfo: `${basicAuth.username}:${password.reveal()}`,
    };
  }
  const token = bearerToken && Secret.read(bearerToken, 'connection.registry.bearerToken', env);
  if (caFile || token)
    config.createAxiosDefaults = {
      ...(caFile ? { httpsAgent: new Agent({ ca: readPem(caFile, 'connection.registry.caFile') }) } : {}),
      ...(token ? { headers: { Authorization: `Bearer ${token.reveal()}` } } : {}),
    };
  return config;
}
