import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTaxonomy } from '../../schemas/taxonomy.js';

describe('MeSH Biology taxonomy', () => {
  const t = loadTaxonomy();

  it('holds the 19 direct children of Biology in MeSH 2024 plus Molecular Biology', () => {
    expect(t.meshYear).toBe(2024);
    expect(t.categories).toHaveLength(20);
    const names = t.categories.map((c) => c.name);
    for (const n of [
      'Computational Biology',
      'Genetics',
      'Microbiology',
      'Ecology',
      'Molecular Biology',
      'Cytology',
    ]) {
      expect(names).toContain(n);
    }
    expect(t.categories.find((c) => c.name === 'Genetics')).toMatchObject({
      descriptorUi: 'D005823',
      treeNumbers: ['H01.158.273.343'],
    });
  });

  it('maps descriptors by UI, name or tree number to their subcategories', () => {
    expect(t.categoriesOf('D056186')).toEqual(['genetics']); // Metagenomics, under Genetics > Genomics
    expect(t.categoriesOf('D001432')).toEqual(['microbiology']); // Bacteriology
    expect(t.categoriesOf('Proteomics')).toEqual(['computational-biology', 'genetics']);
    expect(t.categoriesOf('H01.158.273.343.595.475')).toEqual(['genetics', 'molecular-biology']);
    expect(t.categoriesOf('D017720')).toEqual(['genetics', 'molecular-biology']); // Molecular Epidemiology
    expect(t.categoriesOf('D005823')).toEqual(['genetics']);
    expect(t.categoriesOf('D006801')).toEqual([]); // Humans: outside Biology
    expect(t.categoriesOf('H01.158.273')).toEqual([]); // Biology itself is no subcategory
  });

  it('can be replaced by a user file, and a bad file is refused with the field named', () => {
    const dir = tmpdir();
    const good = join(dir, 'tiny-taxonomy.json');
    writeFileSync(
      good,
      JSON.stringify({
        name: 'Tiny',
        meshYear: 2022,
        root: { descriptorUi: 'D001695', name: 'Biology', treeNumber: 'H01.158.273' },
        source: 'test',
        categories: [
          { id: 'eco', name: 'Ecology', descriptorUi: 'D004463', treeNumbers: ['H01.158.273.248'] },
        ],
        descriptors: [],
      }),
    );
    expect(loadTaxonomy(good).categoriesOf('H01.158.273.248.100')).toEqual(['eco']);
    const bad = join(dir, 'bad-taxonomy.json');
    writeFileSync(bad, JSON.stringify({ name: 'x', meshYear: 'new' }));
    expect(() => loadTaxonomy(bad)).toThrow(/meshYear/);
  });
});
