import { describe, expect, it } from 'vitest';
import { evaluateClassifier, meshCategories, multiLabelScores } from '../../processors/eval-classify.js';
import type { Article } from '../../schemas/article.js';
import { Config } from '../../schemas/config.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';
import { sampleArticle } from '../fixtures/records.js';
import { rig } from '../llm/helpers.js';

describe('classifier evaluation', () => {
  it('scores multi-label predictions per category, micro and macro', () => {
    const r = multiLabelScores([
      { truth: ['genetics'], predicted: ['genetics', 'ecology'] },
      { truth: ['ecology'], predicted: ['ecology'] },
      { truth: ['genetics', 'zoology'], predicted: ['genetics'] },
    ]);
    expect(r.perCategory.get('genetics')).toEqual({ precision: 1, recall: 1, f1: 1, support: 2 });
    expect(r.perCategory.get('ecology')).toMatchObject({ precision: 0.5, recall: 1, support: 1 });
    expect(r.perCategory.get('zoology')).toEqual({ precision: 0, recall: 0, f1: 0, support: 1 });
    // micro: tp 3, fp 1, fn 1.
    expect(r.micro.precision).toBeCloseTo(0.75);
    expect(r.micro.recall).toBeCloseTo(0.75);
    expect(r.micro.f1).toBeCloseTo(0.75);
    expect(r.macro.f1).toBeCloseTo((1 + 2 / 3 + 0) / 3);
  });

  it("takes the reference labels from the article's MeSH headings through the taxonomy", () => {
    const taxonomy = loadTaxonomy();
    const article = {
      mesh: [
        { descriptorUi: null, name: 'Ecology', majorTopic: false, qualifiers: [] },
        { descriptorUi: null, name: 'Humans', majorTopic: false, qualifiers: [] },
      ],
    } as unknown as Article;
    expect(meshCategories(article, taxonomy)).toEqual(['ecology']);
  });

  it('counts as predicted only the labels the classify stage keeps: none under classify.minConfidence', async () => {
    const taxonomy = loadTaxonomy();
    const { minConfidence } = Config.parse({}).classify;
    const article = {
      ...sampleArticle,
      mesh: [{ descriptorUi: null, name: 'Ecology', majorTopic: false, qualifiers: [] }],
    } as unknown as Article;
    // The model names the right category, and a wrong one just under the minimum.
    const reply = {
      labels: [
        { category: 'ecology', confidence: 0.9 },
        { category: 'genetics', confidence: minConfidence - 0.01 },
      ],
    };
    const llm = await rig({}, {}, { responder: () => JSON.stringify(reply) });
    try {
      const report = await evaluateClassifier({
        llm: llm.llm,
        taxonomy,
        minConfidence,
        articles: [article],
        concurrency: 1,
      });
      expect(report.failed).toBe(0);
      expect([...report.perCategory.keys()]).toEqual(['ecology']);
      expect(report.micro).toEqual({ precision: 1, recall: 1, f1: 1, support: 1 });
    } finally {
      await llm.close();
    }
  });
});
