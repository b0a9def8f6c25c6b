import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Article } from '../../schemas/article.js';
import type { ClassifiedQa } from '../../schemas/qa.js';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { cli, FIXTURES, ingestAndRun, topicValues, workspace } from './helpers.js';

const PYTHON = new URL('../../.deploy/py-venv/bin/python', import.meta.url).pathname;
const FORMATS = ['verl-parquet', 'jsonl', 'sft-jsonl', 'cpt-text'] as const;
const SPLITS = ['train', 'heldout'] as const;
/** The fixtures' articles run from 1998 to 2024: those of 2024 are held out. */
const PUBLISHED_FROM = '2024';

/** What Hugging Face `datasets` makes of a file: its rows' count, columns and article ids (where rows name them). */
const LOAD = `
import json, sys, datasets
out = {}
for path in sys.argv[1:]:
    ds = datasets.load_dataset("parquet" if path.endswith(".parquet") else "json", data_files=path, split="train")
    ids = [e["article_id"] for e in ds["extra_info"]] if "extra_info" in ds.column_names else ds["article_id"] if "article_id" in ds.column_names else []
    out[path] = {"rows": len(ds), "columns": sorted(ds.column_names), "articles": sorted(set(ids))}
print(json.dumps(out))
`;

// Issue 23's exports: RL (verl parquet, JSON lines), SFT and CPT under one held-out rule, every
// file loaded by `datasets`, and a publication-date rule leaving no held-out article in training.
describe('exports for every stage', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('every format and split loads in datasets; no article published from the rule on reaches a train export', async () => {
    const ws = workspace(server.url, { sampler: { heldOut: { publishedFrom: PUBLISHED_FROM } } });
    await ingestAndRun(ws.config, [`${FIXTURES}jats`, `${FIXTURES}medline`]);
    const articles = await topicValues<Article>(ws.dir, 'articles');
    const classified = await topicValues<ClassifiedQa>(ws.dir, 'qa.classified');
    const withQa = new Set(classified.map((c) => c.candidate.articleId));
    const held = new Set(
      articles.filter((a) => withQa.has(a.id) && (a.published ?? '0') >= PUBLISHED_FROM).map((a) => a.id),
    );
    const kept = [...withQa].filter((id) => !held.has(id));
    expect(held.size, 'some article with QA is held out').toBeGreaterThan(0);
    expect(kept.length, 'some article with QA is for training').toBeGreaterThan(0);

    const files: Record<string, string> = {};
    for (const format of FORMATS)
      for (const split of SPLITS) {
        const out = join(ws.dir, `${format}-${split}.${format === 'verl-parquet' ? 'parquet' : 'jsonl'}`);
        const r = cli(['export', '--format', format, '--split', split, '--out', out, '--config', ws.config]);
        expect(r.status, `${format} ${split}: ${r.stderr}`).toBe(0);
        files[`${format}-${split}`] = out;
      }

    const loaded = spawnSync(PYTHON, ['-c', LOAD, ...Object.values(files)], { encoding: 'utf8' });
    expect(loaded.status, loaded.stderr).toBe(0);
    const byPath = JSON.parse(loaded.stdout) as Record<
      string,
      { rows: number; columns: string[]; articles: string[] }
    >;
    const lines = (path: string) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    for (const [name, path] of Object.entries(files)) {
      const ds = byPath[path]!;
      expect(ds.rows, name).toBeGreaterThan(0);
      if (!path.endsWith('.parquet')) expect(ds.rows, name).toBe(lines(path).length);
      if (name.startsWith('sft-jsonl')) expect(ds.columns, name).toContain('messages');
      if (name.startsWith('cpt-text')) expect(ds.columns, name).toEqual(['text']);
      // The QA formats name their articles: train ones never a held-out one, heldout ones only those.
      if (!name.startsWith('cpt-text')) {
        expect(ds.articles.length, name).toBeGreaterThan(0);
        for (const id of ds.articles) expect(held.has(id), `${name}: ${id}`).toBe(name.endsWith('-heldout'));
      }
    }

    // The CPT text: no held-out article's title in a train row; every heldout row is one of them.
    const titleOf = new Map(articles.map((a) => [a.id, a.title.trim()]));
    const heldTitles = [...held].map((id) => titleOf.get(id)!).filter(Boolean);
    for (const { text } of lines(files['cpt-text-train']!) as { text: string }[])
      for (const title of heldTitles) expect(text.startsWith(title), title).toBe(false);
    for (const { text } of lines(files['cpt-text-heldout']!) as { text: string }[])
      expect(
        heldTitles.some((t) => text.startsWith(t)),
        text.slice(0, 80),
      ).toBe(true);

    // SFT answers the RL prompt: the assistant ends with the RL row's solution.
    const rl = new Map(
      lines(files['jsonl-train']!).map((r) => [
        (r.extra_info as { qa_id: string }).qa_id,
        r as { prompt: unknown[]; solution: string },
      ]),
    );
    for (const row of lines(files['sft-jsonl-train']!) as {
      qa_id: string;
      messages: { role: string; content: string }[];
    }[]) {
      const r = rl.get(row.qa_id)!;
      expect(row.messages.slice(0, -1)).toEqual(r.prompt);
      expect(row.messages.at(-1)!.role).toBe('assistant');
      expect(row.messages.at(-1)!.content.endsWith(r.solution)).toBe(true);
    }
  }, 600_000);
});
