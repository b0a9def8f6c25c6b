import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouseClient } from '@clickhouse/client';
import { z } from 'zod';

/** deploy/clickhouse/migrations, the same files deploy/clickhouse/start.sh applies to a server. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../deploy/clickhouse/migrations/', import.meta.url));

// Same DDL as start.sh, so whichever of the two runs first creates the ledger the other reads.
const LEDGER_DDL =
  'CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY version';

export interface Migration {
  /** File name without `.sql`: the value recorded in schema_migrations, as start.sh records it. */
  readonly version: string;
  readonly statements: readonly string[];
}

/**
 * start.sh's splitting rule, kept identical so a file means the same thing to both: lines whose
 * first non-blank characters are `--` are dropped, a statement ends at a line ending in `;`, and
 * a trailing statement without `;` still runs. (So `;` must stay out of string literals at line ends.)
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let stmt = '';
  for (const line of sql.split('\n')) {
    if (/^\s*--/.test(line)) continue;
    stmt += `${line}\n`;
    if (/;[ \t\r]*$/.test(line)) {
      const body = stmt.replace(/;[ \t\r]*$/gm, '');
      if (body.trim()) out.push(body.trim());
      stmt = '';
    }
  }
  if (stmt.trim()) out.push(stmt.trim());
  return out;
}

/** Every *.sql in dir, in name order (bash's glob order for these ASCII names). */
export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (n) => ({
      version: n.slice(0, -'.sql'.length),
      statements: splitStatements(await readFile(join(dir, n), 'utf8')),
    })),
  );
}

const LedgerRow = z.object({ version: z.string() });

// Two opens of the same target in one process (count sink and feeder, say) must not both see an
// empty ledger and both run an ALTER: migrations for a target are serialised here. Across
// processes the rule is start.sh first (or one process first), as with any migration tool.
const inFlight = new Map<string, Promise<unknown>>();

/**
 * Applies the migrations not yet recorded in schema_migrations (in the client's database), in
 * order, recording each after its last statement. Returns the versions applied now; an already
 * migrated database (by start.sh or an earlier open) costs two small queries and applies nothing.
 */
export async function applyMigrations(
  client: ClickHouseClient,
  targetKey: string,
  dir: string = MIGRATIONS_DIR,
): Promise<string[]> {
  const previous = inFlight.get(targetKey) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(() => migrate(client, dir));
  inFlight.set(targetKey, run);
  try {
    return await run;
  } finally {
    if (inFlight.get(targetKey) === run) inFlight.delete(targetKey);
  }
}

async function migrate(client: ClickHouseClient, dir: string): Promise<string[]> {
  const migrations = await readMigrations(dir);
  await client.command({ query: LEDGER_DDL });
  const rs = await client.query({
    query: 'SELECT DISTINCT version FROM schema_migrations',
    format: 'JSONEachRow',
  });
  const done = new Set(
    z
      .array(LedgerRow)
      .parse(await rs.json())
      .map((r) => r.version),
  );
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    for (const statement of m.statements) {
      try {
        await client.command({ query: statement });
      } catch (e) {
        throw new Error(`migration ${m.version} failed on: ${statement}\n${(e as Error).message}`, {
          cause: e,
        });
      }
    }
    await client.insert({
      table: 'schema_migrations',
      values: [{ version: m.version }],
      format: 'JSONEachRow',
    });
    applied.push(m.version);
  }
  return applied;
}
