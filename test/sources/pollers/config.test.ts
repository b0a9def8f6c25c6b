import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PollerConfig } from '../../../schemas/pollers.js';
import { addDays, isClosed, lastClosedDay } from '../../../sources/pollers/days.js';
import { createPoller, type PollerLog } from '../../../sources/pollers/index.js';

describe('PollerConfig', () => {
  it('fills defaults per kind', () => {
    const [pubmed, epmc, biorxiv] = [
      PollerConfig.parse({ kind: 'pubmed', since: '2024-01-01' }),
      PollerConfig.parse({ kind: 'europepmc', since: '2024-01-01' }),
      PollerConfig.parse({ kind: 'biorxiv', since: '2024-01-01', category: 'cell_biology' }),
    ];
    expect(pubmed).toMatchObject({
      kind: 'pubmed',
      query: 'hasabstract',
      pageSize: 100,
      lagDays: 1,
      tool: 'bioalchemy-stream',
    });
    expect(epmc).toMatchObject({
      kind: 'europepmc',
      dateField: 'FIRST_IDATE',
      fullText: true,
      stallBackoffMs: 30_000,
      maxStallBackoffMs: 900_000,
      stallAlertAfterMs: 3_600_000,
    });
    expect(biorxiv).toMatchObject({
      kind: 'biorxiv',
      server: 'biorxiv',
      fullText: false,
      category: 'cell_biology',
    });
  });

  it('refuses what would misbehave: bad dates, unknown kinds, oversized efetch pages', () => {
    expect(PollerConfig.safeParse({ kind: 'pubmed', since: '2024-13-40' }).success).toBe(false);
    expect(PollerConfig.safeParse({ kind: 'pubmed', since: '1 March' }).success).toBe(false);
    expect(PollerConfig.safeParse({ kind: 'arxiv', since: '2024-01-01' }).success).toBe(false);
    expect(PollerConfig.safeParse({ kind: 'pubmed', since: '2024-01-01', pageSize: 500 }).success).toBe(
      false,
    );
  });

  it('refuses maxPageFailures: pages are no longer given up by count', () => {
    const parsed = PollerConfig.safeParse({ kind: 'pubmed', since: '2024-01-01', maxPageFailures: 3 });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(/bioalchemy poll --skip/);
  });

  it('has no place for secrets, and exports as JSON Schema', () => {
    // Refused, not dropped: a key in the config file would otherwise sit there doing nothing.
    const parsed = PollerConfig.safeParse({ kind: 'pubmed', since: '2024-01-01', apiKey: 'x' });
    expect(parsed.error!.issues[0]!.message).toBe('Unrecognized key: "apiKey"');
    expect(() => z.toJSONSchema(PollerConfig, { io: 'input' })).not.toThrow();
  });

  it('builds the poller of each kind', () => {
    const names = (['pubmed', 'europepmc', 'biorxiv'] as const).map(
      (kind) => createPoller({ kind, since: '2024-01-01' }).name,
    );
    expect(names).toEqual(['pubmed', 'europepmc', 'biorxiv']);
    expect(createPoller({ kind: 'biorxiv', server: 'medrxiv', since: '2024-01-01' }).name).toBe('medrxiv');
    // The runtime's pino logger is a PollerLog as it is.
    const log: PollerLog = pino({ level: 'silent' });
    expect(createPoller({ kind: 'pubmed', since: '2024-01-01' }, { log }).name).toBe('pubmed');
  });
});

describe('day windows', () => {
  it('reads a day only once it is over and has settled for lagDays (UTC)', () => {
    const now = new Date('2024-03-07T00:30:00Z');
    expect(lastClosedDay(now, 0)).toBe('2024-03-06');
    expect(lastClosedDay(now, 1)).toBe('2024-03-05');
    expect(isClosed('2024-03-05', now, 1)).toBe(true);
    expect(isClosed('2024-03-06', now, 1)).toBe(false);
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2024-12-31', 1)).toBe('2025-01-01');
  });
});
