import { afterAll, beforeAll, describe, it } from 'vitest';
import type { LlmServer } from '../llm-server/server.js';
import { expectExactlyOnceAfterKills, startKillServer } from './kill-suite.js';

describe('kill -9 of run (embedded)', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await startKillServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('pays no second call for a reply that arrived (journaled) and writes no QA twice, across 10 kills', async () => {
    await expectExactlyOnceAfterKills(server, 10);
  }, 600_000);
});
