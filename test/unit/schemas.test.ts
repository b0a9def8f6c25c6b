import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import {
  Article,
  articleId,
  contentHash,
  exportJsonSchemas,
  formatIssues,
  QaCandidate,
  RECORD_SCHEMA_NAMES,
} from '../../schemas/index.js';
import { sampleArticle, sampleQa } from '../fixtures/records.js';

describe('ids', () => {
  it('are deterministic and sensitive to every part and its boundaries', () => {
    expect(contentHash('a', 'b')).toBe(contentHash('a', 'b'));
    expect(contentHash('ab', 'c')).not.toBe(contentHash('a', 'bc'));
    expect(contentHash('a')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('prefer DOI, then PMID, then PMCID, then the content hash', () => {
    expect(articleId({ doi: 'https://doi.org/10.1371/ABC', pmid: '1', contentHash: 'h' })).toBe(
      'doi:10.1371/abc',
    );
    expect(articleId({ pmid: ' 123 ', pmcid: 'PMC9', contentHash: 'h' })).toBe('pmid:123');
    expect(articleId({ pmcid: '9', contentHash: 'h' })).toBe('pmcid:PMC9');
    expect(articleId({ contentHash: 'h' })).toBe('sha256:h');
  });
});

describe('record schemas', () => {
  it('accept a valid article and apply defaults', () => {
    const a = Article.parse(sampleArticle);
    expect(a.mesh).toEqual([]);
    expect(a.captions).toEqual([]);
  });

  it('name the failing field of an invalid record', () => {
    const r = QaCandidate.safeParse({ ...sampleQa, answer: 'banana' });
    expect(r.success).toBe(false);
    expect(formatIssues(r.error!)).toContain('answer: a multiple-choice answer is one option letter');
    const free = QaCandidate.safeParse({
      ...sampleQa,
      kind: 'free-form',
      options: undefined,
      answer: 'x'.repeat(300),
    });
    expect(formatIssues(free.error!)).toMatch(/^answer: a free-form answer is short/);
  });

  it('export as JSON Schemas that accept valid records and refuse invalid ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'schemas-'));
    const files = exportJsonSchemas(dir);
    expect(files.map((f) => f.split('/').pop())).toEqual(
      [...RECORD_SCHEMA_NAMES, 'config'].map((n) => `${n}.schema.json`),
    );
    const ajv = new Ajv({ strict: false });
    const load = (name: string) =>
      ajv.compile(JSON.parse(readFileSync(join(dir, `${name}.schema.json`), 'utf8')));
    const article = load('article');
    expect(article(sampleArticle)).toBe(true);
    expect(article({ ...sampleArticle, published: 'March' })).toBe(false);
    const qa = load('qa-candidate');
    expect(qa(sampleQa)).toBe(true);
    expect(qa({ ...sampleQa, kind: 'essay' })).toBe(false);
    for (const name of RECORD_SCHEMA_NAMES) expect(() => load(name)).not.toThrow();
  });
});
