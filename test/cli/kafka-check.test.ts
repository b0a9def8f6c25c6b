import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAsync } from '../e2e/helpers.js';

/**
 * `kafka check`, `run` and `config show` against a TLS listener whose certificate is self-signed
 * for broker.test only: the handshake is real (Node's TLS, as kafkajs uses it), so an unknown CA
 * and a hostname mismatch fail as they would against a broker. The SASL password is a secret
 * read from the environment: it must show nowhere.
 */
const SECRET = 'pa55-W0rd-that-must-not-show';
const dir = mkdtempSync(join(tmpdir(), 'kafka-check-'));
const cert = join(dir, 'broker.pem');
const key = join(dir, 'broker.key');
let server: Server;
let port: number;

beforeAll(async () => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=broker.test',
      '-addext',
      'subjectAltName=DNS:broker.test',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (socket) =>
    socket.on('error', () => {}),
  );
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function configFile(name: string, tls: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      log: `kafka://127.0.0.1:${port}?client=kafkajs`,
      connection: {
        kafka: {
          tls,
          sasl: { mechanism: 'SCRAM-SHA-512', username: 'bioalchemy', password: { env: 'KAFKA_PASSWORD' } },
        },
      },
    }),
  );
  return file;
}

const env = { KAFKA_PASSWORD: SECRET, BIOALCHEMY_LOG_LEVEL: 'info' };

describe('kafka check, run and config show on a secured connection', () => {
  it('config show names the secret, never its value', async () => {
    const r = await cliAsync(['config', 'show', '--config', configFile('show', {})], { env });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).connection.kafka.sasl.password).toEqual({ env: 'KAFKA_PASSWORD' });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it('an unknown CA: one line naming connection.kafka.tls.caFile, quoting the TLS error', async () => {
    const r = await cliAsync(['kafka', 'check', '--config', configFile('no-ca', {})], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^bioalchemy: connection\.kafka\.tls\.caFile: .*the broker said: ".*self[- ]signed certificate/m,
    );
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it('a hostname mismatch: one line naming connection.kafka.tls.verifyHostname', async () => {
    const r = await cliAsync(['kafka', 'check', '--config', configFile('mismatch', { caFile: cert })], {
      env,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bioalchemy: connection\.kafka\.tls\.verifyHostname: .*altnames/m);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it('run stops at start on the same fault, within 30 s, exit 1, its logs free of the secret', async () => {
    const r = await cliAsync(['run', '--until-idle', '--config', configFile('run', {})], { env });
    expect(r.code).toBe(1);
    expect(r.seconds).toBeLessThan(30);
    expect(r.stderr).toMatch(/^bioalchemy: connection\.kafka\.tls\.caFile: /m);
    // The start logs the endpoint it connects to: protocol, mechanism and user, no password.
    expect(r.stderr).toContain('"mechanism":"SCRAM-SHA-512"');
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });
});
