import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../schemas/config.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/bioalchemy.js');
const data = mkdtempSync(join(tmpdir(), 'examples-'));
afterAll(() => rmSync(data, { recursive: true, force: true }));

const cli = (...args: string[]) => spawnSync(BIN, args, { cwd: ROOT, encoding: 'utf8' });

describe('the sample input under examples/', () => {
  it("is what the README's first command ingests: five articles, each with text, none a dead letter", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const first = readme.split('```sh\n')[1]!.split('\n')[0]!;
    expect(first).toContain('bioalchemy ingest examples/articles &&');
    const ingested = cli('ingest', 'examples/articles', '--data', data);
    expect(ingested.status, ingested.stderr).toBe(0);
    expect(ingested.stderr).toContain(
      '5 new article(s), 0 updated by another source, 0 duplicate(s), 0 dead letter(s)',
    );
    const articles = cli('consume', 'articles', '--data', data)
      .stdout.trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { id: string; abstract: string | null; sections: unknown[]; mesh: unknown[] },
      );
    expect(articles.map((a) => a.id).sort()).toEqual(
      [1, 2, 3, 4, 5].map((n) => `doi:10.5555/bioalchemy.example.${n}`),
    );
    for (const a of articles) expect(a.abstract?.length, a.id).toBeGreaterThan(100);
  });

  it('pubmed.json is a valid config with one PubMed poller', () => {
    const config = loadConfig(join(ROOT, 'examples/pubmed.json'));
    expect(config.sources.map((s) => s.kind)).toEqual(['pubmed']);
  });
});
