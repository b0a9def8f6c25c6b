import kafkajs from 'kafkajs';
import { afterAll, beforeAll, beforeEach, describe, it } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { expectExactlyOnceAfterKills, startKillServer } from '../e2e/kill-suite.js';
import type { LlmServer } from '../llm-server/server.js';
import { KAFKA } from './env.js';

/**
 * The pipeline's topics and groups have fixed names, so each test here starts from a broker
 * without them: topics (changelogs included) and consumer groups deleted, and gone.
 */
async function clearPipeline(): Promise<void> {
  const admin = new kafkajs.Kafka({ brokers: [KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const names = new Set(pipelineTopology().topics.map((t) => t.name));
    const doomed = (await admin.listTopics()).filter(
      (t) => names.has(t) || /^(extract|grade|classify)-.*-changelog$/.test(t),
    );
    if (doomed.length) await admin.deleteTopics({ topics: doomed, timeout: 30_000 });
    const deadline = Date.now() + 60_000;
    while ((await admin.listTopics()).some((t) => doomed.includes(t))) {
      if (Date.now() > deadline) throw new Error(`topics not deleted: ${doomed.join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await admin.deleteGroups(['extract', 'grade', 'classify']).catch(() => {});
  } finally {
    await admin.disconnect();
  }
}

describe('kill -9 of run on Kafka', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await startKillServer();
  });
  afterAll(async () => {
    await server.stop();
  });
  beforeEach(clearPipeline, 120_000);

  for (const client of ['kafkajs', 'rdkafka'] as const) {
    it(`${client}: pays no second call for a reply that arrived (journaled) and writes no QA twice, across 10 kills`, async () => {
      await expectExactlyOnceAfterKills(server, 10, `kafka://${KAFKA}?client=${client}`);
    }, 900_000);
  }
});
