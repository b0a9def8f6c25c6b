import { describe, expect, it } from 'vitest';
import { formatReport, runChaos } from '../chaos/chaos.js';

// The short chaos run of CI (`npm run chaos` is the long one): the embedded runtime, the ClickHouse
// server restarted under it, 20% LLM faults, runs and the trainer killed with SIGKILL.
describe('chaos, short (embedded runtime)', () => {
  it('loses nothing and counts nothing twice', async () => {
    const report = await runChaos({ log: 'embedded', articles: 40, kills: 6 });
    process.stdout.write(`${formatReport(report)}\n`);
    expect(report.articles).toBe(40);
    expect(report.lost).toBe(0);
    expect(report.duplicated).toBe(0);
    expect(report.classified).toBeGreaterThan(0);
    expect(report.countsMatch).toBe(true);
    expect(report.deliveredAsSelected).toBe(true);
    expect(report.selectedCopies).toBeGreaterThan(0);
    expect(report.llm.faults).toBeGreaterThan(0);
    expect(report.llm.paidTwice).toBeLessThanOrEqual(report.llm.allowedTwice);
    expect(report.trainerKills).toBe(2);
  }, 600_000);
});
