import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { accessFault, explainAccess, KafkaAccessError } from '../../topology/runtime/kafka/access-errors.js';

const require = createRequire(import.meta.url);
/** kafkajs's own protocol errors by code, as the broker's answers become them. */
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as {
  createErrorFromCode: (code: number) => { type: string; code: number; message: string; retriable: boolean };
};
/** node-rdkafka's error class, as its callbacks and error events deliver them. */
const LibrdKafkaError = require('node-rdkafka/lib/error') as new (e: {
  message: string;
  code: number;
}) => Error;

const {
  KafkaJSSASLAuthenticationError,
  KafkaJSProtocolError,
  KafkaJSConnectionError,
  KafkaJSNumberOfRetriesExceeded,
} = kafkajs;

const protocol = (code: number) => new KafkaJSProtocolError(createErrorFromCode(code) as unknown as Error);
/** kafkajs's typings give this class no constructor argument; the class takes its message. */
const SaslError = KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;
const rd = (code: number, message: string) => new LibrdKafkaError({ code, message });

/** The real shapes of each client's error, and the config key (or ACL) each one names. */
const CASES: [string, unknown, string][] = [
  [
    'kafkajs: wrong SCRAM password',
    new SaslError(
      'SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
    ),
    'connection.kafka.sasl.password',
  ],
  [
    'kafkajs: wrong PLAIN password, after retries',
    new KafkaJSNumberOfRetriesExceeded(
      new SaslError('SASL PLAIN authentication failed: Authentication failed: Invalid username or password'),
      { retryCount: 0, retryTime: 0 },
    ),
    'connection.kafka.sasl.password',
  ],
  [
    'librdkafka: wrong password (-169)',
    rd(
      -169,
      'SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 5ms in state AUTH_REQ)',
    ),
    'connection.kafka.sasl.password',
  ],
  [
    'kafkajs: unknown CA',
    new KafkaJSConnectionError('Connection error: self-signed certificate in certificate chain', {
      broker: 'k:29093',
      code: 'SELF_SIGNED_CERT_IN_CHAIN',
    } as never),
    'connection.kafka.tls.caFile',
  ],
  [
    'kafkajs: unknown CA (leaf)',
    new KafkaJSConnectionError('Connection error: unable to verify the first certificate', {
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    } as never),
    'connection.kafka.tls.caFile',
  ],
  [
    'librdkafka: unknown CA (-181)',
    rd(
      -181,
      'SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate could not be verified, verify that ssl.ca.location is correctly configured or root CA certificates are installed (install ca-certificates package) (after 4ms in state SSL_HANDSHAKE)',
    ),
    'connection.kafka.tls.caFile',
  ],
  [
    'kafkajs: hostname mismatch',
    new KafkaJSConnectionError(
      "Connection error: Hostname/IP does not match certificate's altnames: Host: localhost. is not in the cert's altnames: DNS:broker.test",
      { code: 'ERR_TLS_CERT_ALTNAME_INVALID' } as never,
    ),
    'connection.kafka.tls.verifyHostname',
  ],
  [
    'librdkafka: hostname mismatch',
    rd(-181, 'Failed to verify broker certificate: Hostname mismatch'),
    'connection.kafka.tls.verifyHostname',
  ],
  [
    'kafkajs: mechanism not offered',
    new SaslError('SASL SCRAM-SHA-256 mechanism is not supported by the server'),
    'connection.kafka.sasl.mechanism',
  ],
  [
    'librdkafka: mechanism not offered',
    rd(
      -169,
      "SASL SCRAM-SHA-256 mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512",
    ),
    'connection.kafka.sasl.mechanism',
  ],
  [
    'a librdkafka build without a feature',
    new Error(
      'connection.kafka.sasl.mechanism: this librdkafka (node-rdkafka 2.12.0) is built without "oidc" (it has: ssl)',
    ),
    'connection.kafka.sasl.mechanism',
  ],
  ['kafkajs: TOPIC_AUTHORIZATION_FAILED', protocol(29), 'ACL'],
  ['kafkajs: GROUP_AUTHORIZATION_FAILED', protocol(30), 'ACL'],
  ['kafkajs: TRANSACTIONAL_ID_AUTHORIZATION_FAILED', protocol(53), 'ACL'],
  ['librdkafka: topic authorization failed', rd(29, 'Broker: Topic authorization failed'), 'ACL'],
  ['librdkafka: group authorization failed', rd(30, 'Broker: Group authorization failed'), 'ACL'],
  [
    'librdkafka: transactional id authorization failed',
    rd(53, 'Broker: Transactional Id authorization failed'),
    'ACL',
  ],
];

describe('access faults: both clients, one mapping', () => {
  for (const [name, err, key] of CASES)
    it(`${name} -> ${key}`, () => {
      const fault = accessFault(err);
      expect(fault?.key).toBe(key);
      const explained = explainAccess(err) as KafkaAccessError;
      expect(explained).toBeInstanceOf(KafkaAccessError);
      // One line: the key first, the broker quoted.
      expect(explained.message.startsWith(`${key}: `)).toBe(true);
      expect(explained.message).toContain(`"${(err as Error).message}"`);
      expect(explained.message).not.toContain('\n');
    });

  it('names the ACL error type the broker gave', () => {
    expect(accessFault(protocol(53))!.problem).toContain('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    expect(accessFault(rd(30, 'Broker: Group authorization failed'))!.problem).toContain(
      'GROUP_AUTHORIZATION_FAILED',
    );
  });

  it('a broker down or a timeout is no access fault: the error is left as it is', () => {
    const down = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:29093', {
      code: 'ECONNREFUSED',
    } as never);
    expect(accessFault(down)).toBeNull();
    expect(explainAccess(down)).toBe(down);
    expect(accessFault(rd(-185, 'Local: Timed out'))).toBeNull();
  });
});
