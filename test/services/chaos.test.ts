import { describe, expect, it } from 'vitest';
import { chaosPassed, formatReport, runChaos } from '../chaos/chaos.js';

// The short chaos run of CI (`npm run chaos` is the long one): the embedded runtime, the ClickHouse
// server restarted under it, 20% LLM faults, runs and the trainer killed with SIGKILL.
describe('chaos, short (embedded runtime)', () => {
  it('loses nothing and counts nothing twice', async () => {
    // 8 of the 40 are earlier twins produced last: the join must withdraw accepted QA.
    const report = await runChaos({ log: 'embedded', articles: 40, twins: 8, kills: 6 });
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
    // The withdrawal path ran, and every check of it held.
    expect(report.withdrawals.count).toBeGreaterThan(0);
    expect(report.withdrawals).toMatchObject({
      repeated: 0,
      notAccepted: 0,
      servedAfter: 0,
      clickHouseDiffers: 0,
    });
    expect(chaosPassed(report)).toBe(true);
  }, 600_000);
});
