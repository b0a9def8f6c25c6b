import { describe, expect, it } from 'vitest';
import { cptRows, exportRows, sftRow } from '../../processors/feeder/export.js';
import { heldOutArticles } from '../../processors/sampler/selection.js';
import { FeederConfig } from '../../schemas/feeder.js';
import { mix, poolItems } from './fixtures.js';

const settings = FeederConfig.parse({});

describe('one held-out rule for every export format', () => {
  // Three QA an article, of different topics; Botany is held out: an article with one Botany QA
  // is held out whole, its other QA and its text with it.
  const items = poolItems(60);
  const m = mix(1);
  const held = heldOutArticles(items, m.heldOut);

  it('holds out every QA of an article one of whose QA is held out, in RL and SFT rows', () => {
    const mixed = items.filter((i) => held.has(i.articleId) && !i.topics.includes('Botany'));
    expect(mixed.length, 'articles mixing Botany and other QA').toBeGreaterThan(0);
    const train = exportRows(items, m, 'train', settings);
    const heldout = exportRows(items, m, 'heldout', settings);
    expect(train.length).toBeGreaterThan(0);
    for (const r of train) expect(held.has(r.extra_info.article_id)).toBe(false);
    expect(new Set(heldout.map((r) => r.extra_info.qa_id))).toEqual(
      new Set(items.filter((i) => held.has(i.articleId)).map((i) => i.id)),
    );
    const sft = train.map((r) => sftRow(r, 'Because the text says so.'));
    expect(sft.map((r) => r.qa_id)).toEqual(train.map((r) => r.extra_info.qa_id));
    expect(sft[0]!.messages.at(-1)).toEqual({
      role: 'assistant',
      content: `Because the text says so.\n\n${train[0]!.solution}`,
    });
    expect(sftRow(train[0]!, ' ').messages.at(-1)!.content).toBe(train[0]!.solution);
  });

  it('cpt-text: held-out articles only in heldout, once; train articles as often as their labels ask', () => {
    const articleIds = [...new Set(items.map((i) => i.articleId))];
    const articles = articleIds.map((id) => ({
      id,
      text: `text of ${id}`,
      source: 'jats',
      published: '2020',
    }));
    const train = cptRows(articles, items, m, 'train').map((r) => r.text);
    const heldout = cptRows(articles, items, m, 'heldout').map((r) => r.text);
    expect(heldout.sort()).toEqual([...held].map((id) => `text of ${id}`).sort());
    expect(train.length).toBeGreaterThan(0);
    for (const t of train) expect(held.has(t.replace('text of ', ''))).toBe(false);
    // Genetics' level 2 gives an article with a Genetics QA two or one copies; others one at most.
    const copies = new Map<string, number>();
    for (const t of train) copies.set(t, (copies.get(t) ?? 0) + 1);
    expect(Math.max(...copies.values())).toBe(2);
  });
});
