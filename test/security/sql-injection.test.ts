import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDITED, sqlInjectionSuite, sqlInterpolations } from './sql-suite.js';

// ClickHouse queries take parameters or no user input: injection strings through every
// user-controlled value on chdb here, on the 18.16 server in test/services/sql-injection.test.ts.
sqlInjectionSuite({
  name: 'chdb',
  queryParams: true,
  async fresh() {
    const dir = await mkdtemp(join(tmpdir(), 'bioalchemy-sqli-'));
    return { url: `chdb:${dir}`, dispose: () => rm(dir, { recursive: true, force: true }) };
  },
});

describe('SQL text in the code', () => {
  it('splices only audited expressions, never a value from outside (every other value is a parameter or row data)', () => {
    const found = sqlInterpolations(['analytics', 'processors', 'server', 'cli', 'topology', 'llm']);
    // The scan itself works: the dashboard's queries splice computed whole numbers.
    expect(found.length).toBeGreaterThan(5);
    const unaudited = found.filter((f) => !(f.expr in AUDITED));
    expect(
      unaudited,
      'a new interpolation inside SQL: make it a {name:Type} parameter, or audit it in AUDITED',
    ).toEqual([]);
  });
});
