import { describe, expect, it } from 'vitest';
import { meshCategories, multiLabelScores } from '../../processors/eval-classify.js';
import type { Article } from '../../schemas/article.js';
import { loadTaxonomy } from '../../schemas/taxonomy.js';

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
});
