import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Reference } from '../../schemas/reference.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { cli, runUntilIdle, workspace } from '../e2e/helpers.js';
import { classifiedOf, distinctPerTopic } from '../sampler/classified.js';
import { generateItems, REFERENCE } from '../sampler/generated.js';

// A config with no LLM calls to make: nothing reaches the LLM stages in these tests.
const NO_LLM = 'http://127.0.0.1:9/v1';

describe('bioalchemy mix', () => {
  it("prints the paper's Table 13 percentages at α = 1.0 from the reference alone", () => {
    const ws = workspace(NO_LLM);
    const r = cli(['mix', '--alpha', '1.0', '--config', ws.config]);
    expect(r.status, r.stderr).toBe(0);
    const row = (name: string) => r.stdout.split('\n').find((l) => l.includes(name)) ?? '';
    expect(row('Computational Biology')).toMatch(/95,179\s+45\.32%\s+45\.32% \(1\.0x\)/);
    expect(row('Genetics')).toMatch(/75,973\s+36\.18%\s+36\.18%/);
    expect(row('Microbiology')).toMatch(/22,900\s+10\.90%\s+10\.90%/);
    expect(row('Ecology')).toMatch(/5,385\s+2\.56%\s+2\.56%/);
    expect(row('Molecular Biology')).toMatch(/3,944\s+1\.88%\s+1\.88%/);
    expect(r.stdout).toMatch(/unknown: Botany, Cell Biology/);
    expect(r.stdout).toMatch(/no QA in ClickHouse yet/);
  });

  it('gives the same figures as JSON, with the ratios of Table 13 at α = 0.5', () => {
    const ws = workspace(NO_LLM);
    const r = cli(['mix', '--alpha', '0.5', '--json', '--config', ws.config]);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      alpha: number;
      table13: { partial: boolean; rows: { category: string; smoothed: number }[] };
      live: unknown;
    };
    expect(out.alpha).toBe(0.5);
    expect(out.table13.partial).toBe(true);
    expect(out.live).toBeNull();
    const share = (c: string) => out.table13.rows.find((x) => x.category === c)!.smoothed;
    expect(share('computational-biology') / share('genetics')).toBeCloseTo(26.97 / 24.1, 3);
  });

  it('refuses an α outside 0..1 with one line and status 2', () => {
    const r = cli(['mix', '--alpha', '1.5']);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/α is a number from 0 to 1/);
  });

  it('from live data: the full dataset and the mix in Table 5 terms, held-out sizes, and an SVG plot', async () => {
    const items = generateItems(3_000, 21);
    const ws = workspace(NO_LLM, { sampler: { heldOut: { publishedFrom: '2024' } } });
    // The generated topics follow a complete reference; the mix follows it too.
    const referenceFile = join(ws.dir, 'reference.json');
    writeFileSync(
      referenceFile,
      JSON.stringify({
        name: 'generated',
        total: null,
        categories: Object.fromEntries(Object.entries(REFERENCE).map(([c, n]) => [c, { count: n }])),
      }),
    );
    const lines = items.map((it, i) => JSON.stringify(classifiedOf(it, i))).join('\n');
    expect(cli(['produce', 'qa.classified', '--config', ws.config], lines).status).toBe(0);
    const run = await runUntilIdle(ws.config);
    expect(run.code, run.stderr).toBe(0);

    const svg = join(ws.dir, 'mix.svg');
    const r = cli([
      'mix',
      '--alpha',
      '0.5',
      '--json',
      '--reference',
      referenceFile,
      '--plot',
      svg,
      '--config',
      ws.config,
    ]);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      live: {
        full: { size: number; yield: number };
        metrics: { items: number; heldOut: number; size: number; tvdTarget: number; yield: number };
        observed: Record<string, number>;
      };
    };
    // The rule holds out whole articles (classifiedOf puts five consecutive items in one): an item
    // published before 2024 is held out too when another QA of its article is not.
    const heldOutArticles = new Set(
      items.flatMap((it, i) => ((it.published ?? '') >= '2024' ? [Math.floor(i / 5)] : [])),
    );
    const heldOut = items.filter((_, i) => heldOutArticles.has(Math.floor(i / 5)));
    const eligible = items.filter((it) => !heldOut.includes(it));
    expect(out.live.metrics.heldOut).toBe(heldOut.length);
    expect(out.live.metrics.items).toBe(eligible.length);
    expect(out.live.full).toMatchObject({ size: eligible.length, yield: 1 });
    expect(out.live.observed).toEqual(
      Object.fromEntries(distinctPerTopic(eligible).map((c) => [c.category, c.n])),
    );
    expect(out.live.metrics.tvdTarget).toBeLessThan(0.02);
    expect(out.live.metrics.yield).toBeCloseTo(out.live.metrics.size / eligible.length, 10);

    const text = cli(['mix', '--alpha', '0.5', '--reference', referenceFile, '--config', ws.config]);
    expect(text.stdout).toMatch(/^full\s+[\d,]+\s+[\d.]+x\s+[\d.]+x\s+100\.00%/m);
    expect(text.stdout).toMatch(/^α = 0\.5\s+[\d,]+/m);
    expect(text.stdout).toMatch(
      new RegExp(
        `held out for evaluation: ${heldOut.length.toLocaleString('en-US')} items \\(published from 2024\\)`,
      ),
    );

    const drawn = readFileSync(svg, 'utf8');
    expect(drawn.startsWith('<svg')).toBe(true);
    for (const name of [
      'Computational Biology',
      'Parasitology',
      'live selection',
      'target (α = 0.5)',
      'reference',
    ])
      expect(drawn).toContain(name);
  }, 120_000);
});

describe('bioalchemy reference build', () => {
  it('counts ingested MEDLINE articles per category through the MeSH tree, complete and within the years', () => {
    const ws = workspace(NO_LLM);
    const article = (i: number, published: string, headings: string[]) =>
      JSON.stringify({
        id: `pmid:${700 + i}`,
        source: 'medline',
        doi: null,
        pmid: String(700 + i),
        pmcid: null,
        title: `Study ${i}`,
        abstract: 'An abstract.',
        sections: [],
        mesh: headings.map((name) => ({ descriptorUi: null, name, majorTopic: false, qualifiers: [] })),
        journal: null,
        published,
        licence: null,
        contentHash: `h${i}`,
      });
    const lines = [
      article(1, '2021-03', ['Ecology']),
      article(2, '2022', ['Genetics', 'Ecology', 'Humans']),
      article(3, '2022', ['Humans']),
      article(4, '2019', ['Ecology']),
    ].join('\n');
    expect(cli(['produce', 'articles', '--key', 'id', '--config', ws.config], lines).status).toBe(0);
    const file = join(ws.dir, 'ref.json');
    const r = cli([
      'reference',
      'build',
      '--from-year',
      '2020',
      '--to-year',
      '2024',
      '--out',
      file,
      '--config',
      ws.config,
    ]);
    expect(r.status, r.stderr).toBe(0);
    const ref = Reference.parse(JSON.parse(readFileSync(file, 'utf8')));
    expect(ref.total).toBe(2);
    expect(ref.categories.ecology).toEqual({ count: 2, share: null });
    expect(ref.categories.genetics).toEqual({ count: 1, share: null });
    expect(Object.keys(ref.categories).sort()).toEqual(
      loadTaxonomy()
        .categories.map((c) => c.id)
        .sort(),
    );
    expect(Object.values(ref.categories).every((c) => c.count !== null)).toBe(true);

    const mix = cli(['mix', '--alpha', '1', '--reference', file, '--config', ws.config]);
    expect(mix.stdout).toMatch(/Ecology\s+2\s+100\.00%/);

    const wrong = cli([
      'reference',
      'build',
      '--from-year',
      '2024',
      '--to-year',
      '2020',
      '--config',
      ws.config,
    ]);
    expect(wrong.status).toBe(2);
    const none = cli([
      'reference',
      'build',
      '--from-year',
      '1990',
      '--to-year',
      '1991',
      '--config',
      ws.config,
    ]);
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/no ingested article published 1990-1991/);
  });
});
