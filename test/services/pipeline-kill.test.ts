import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectExactlyOnceAfterKills, startKillServer } from '../e2e/kill-suite.js';
import type { LlmServer } from '../llm-server/server.js';
import { KAFKA } from './env.js';

describe('kill -9 of run on Kafka', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await startKillServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: pays no second call for a reply that arrived (journaled) and writes no QA twice, across 10 kills`, async () => {
      await expectExactlyOnceAfterKills(server, 10, `kafka://${KAFKA}?client=${client}`);
    }, 900_000);
  }
});
