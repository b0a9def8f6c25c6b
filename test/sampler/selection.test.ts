import { describe, expect, it } from 'vitest';
import {
  computeSelection,
  copiesOf,
  ItemIndex,
  itemKey,
  type MixItem,
  nthSmallest,
  type SelectionParams,
  uniformOf,
} from '../../processors/sampler/selection.js';
import { HeldOut } from '../../schemas/mix-state.js';
import { generateItems, prng, REFERENCE } from './generated.js';

const params = (over: Partial<SelectionParams> = {}): SelectionParams => ({
  alpha: 0.5,
  seed: 7,
  repeatCap: 1,
  maxSize: null,
  minTopicItems: 1,
  reference: REFERENCE,
  heldOut: HeldOut.parse({}),
  ...over,
});

function indexOf(items: readonly MixItem[]): ItemIndex {
  const index = new ItemIndex();
  for (const it of items) index.add(it);
  return index;
}

function selectedIds(items: readonly MixItem[], copies: Uint16Array): Set<string> {
  return new Set(items.filter((_, i) => copies[i]! > 0).map((it) => it.id));
}

describe('the permanent random numbers', () => {
  it('are uniform and differ by seed', () => {
    const us = Array.from({ length: 20_000 }, (_, i) => uniformOf(itemKey(`id-${i}`), 3));
    const mean = us.reduce((s, u) => s + u, 0) / us.length;
    expect(mean).toBeGreaterThan(0.49);
    expect(mean).toBeLessThan(0.51);
    const below = us.filter((u) => u < 0.1).length / us.length;
    expect(below).toBeGreaterThan(0.09);
    expect(below).toBeLessThan(0.11);
    expect(uniformOf(itemKey('x'), 1)).not.toBe(uniformOf(itemKey('x'), 2));
    expect(Math.min(...us)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...us)).toBeLessThan(1);
  });
});

describe('the selection over a generated dataset', () => {
  const items = generateItems(30_000);

  for (const alpha of [1, 0.7, 0.5, 0.3]) {
    it(`follows the target within TVD 0.02 at α = ${alpha}, and reports its yield`, () => {
      const s = computeSelection(indexOf(items), params({ alpha }));
      expect(s.metrics.tvdTarget).toBeLessThan(0.02);
      expect(s.metrics.size).toBeGreaterThan(0);
      expect(s.metrics.yield).toBeCloseTo(s.metrics.size / items.length, 10);
      console.log(
        `α=${alpha}: size ${s.metrics.size} of ${s.metrics.items} (yield ${(100 * s.metrics.yield).toFixed(1)}%), TVD to target ${s.metrics.tvdTarget.toFixed(4)}, JS ${s.metrics.jsTarget.toFixed(4)}, TVD to reference ${s.metrics.tvdReference.toFixed(3)}`,
      );
    });
  }

  it('publishes a rule that gives every item the copies the fill gave it', () => {
    for (const repeatCap of [1, 3]) {
      const s = computeSelection(indexOf(items), params({ alpha: 0.3, repeatCap }));
      const mix = { seed: 7, quotas: s.quotas, heldOut: HeldOut.parse({}) };
      const mismatches = items.filter((it, i) => copiesOf(mix, it) !== s.copies[i]);
      expect(mismatches).toEqual([]);
      expect(Math.max(...s.copies)).toBeLessThanOrEqual(repeatCap);
    }
  });

  it('repeats rare topics up to the cap, which raises the size', () => {
    const once = computeSelection(indexOf(items), params({ alpha: 0.3 }));
    const thrice = computeSelection(indexOf(items), params({ alpha: 0.3, repeatCap: 3 }));
    expect(Math.max(...thrice.copies)).toBe(3);
    expect(thrice.metrics.size).toBeGreaterThan(once.metrics.size * 1.5);
    expect(thrice.metrics.tvdTarget).toBeLessThan(0.02);
  });

  it('is the same for a seed whatever the arrival order, and different for another seed', () => {
    const a = computeSelection(indexOf(items), params());
    const reversed = [...items].reverse();
    const b = computeSelection(indexOf(reversed), params());
    expect(selectedIds(reversed, b.copies)).toEqual(selectedIds(items, a.copies));
    const c = computeSelection(indexOf(items), params({ seed: 8 }));
    expect(selectedIds(items, c.copies)).not.toEqual(selectedIds(items, a.copies));
  });

  it('keeps at least 90% of what it selected when 10% more data arrives', () => {
    const before = computeSelection(indexOf(items), params());
    const grown = [...items, ...generateItems(3_000, 2, 'new')];
    const after = computeSelection(indexOf(grown), params());
    const was = selectedIds(items, before.copies);
    const now = selectedIds(grown, after.copies);
    const kept = [...was].filter((id) => now.has(id)).length / was.size;
    console.log(`kept ${(100 * kept).toFixed(2)}% of ${was.size} selected items after +10% data`);
    expect(kept).toBeGreaterThanOrEqual(0.9);
    expect(after.metrics.tvdTarget).toBeLessThan(0.02);
  });

  it('stays under the maximum size', () => {
    const s = computeSelection(indexOf(items), params({ maxSize: 2_000 }));
    expect(s.metrics.size).toBeLessThanOrEqual(2_000);
    expect(s.metrics.size).toBeGreaterThan(1_800);
    expect(s.metrics.tvdTarget).toBeLessThan(0.03);
  });

  it('never selects a held-out item, and counts them', () => {
    const heldOut = HeldOut.parse({ topics: ['ecology'], publishedFrom: '2024', sources: ['asm'] });
    const s = computeSelection(indexOf(items), params({ heldOut }));
    const held = items.filter(
      (it) => it.topics.includes('ecology') || it.source === 'asm' || (it.published ?? '') >= '2024',
    );
    expect(s.metrics.heldOut).toBe(held.length);
    expect(held.some((it) => s.copies[items.indexOf(it)]! > 0)).toBe(false);
    expect(s.quotas.ecology).toBeUndefined();
    expect(s.starving).toContain('ecology');
  });

  it('holds out every QA of an article one of whose QA the rule matches, and counts them', () => {
    const heldOut = HeldOut.parse({ topics: ['ecology'], publishedFrom: null, sources: [] });
    // Articles of three consecutive items: an article with an ecology QA is held out whole.
    const index = new ItemIndex();
    const article = (i: number) => Math.floor(i / 3);
    for (const [i, it] of items.entries()) index.add({ ...it, articleId: `a${article(i)}` });
    const s = computeSelection(index, params({ heldOut }));
    const heldArticles = new Set(
      items.flatMap((it, i) => (it.topics.includes('ecology') ? [article(i)] : [])),
    );
    const held = items.filter((_, i) => heldArticles.has(article(i)));
    expect(held.some((it) => !it.topics.includes('ecology'))).toBe(true);
    expect(s.metrics.heldOut).toBe(held.length);
    expect(held.some((it) => s.copies[items.indexOf(it)]! > 0)).toBe(false);
  });

  it('marks topics without enough items as starving instead of shrinking the mix to them', () => {
    const few = items.filter((it) => !it.topics.includes('parasitology'));
    few.push({ id: 'lonely', topics: ['parasitology'], source: 'asm', published: null });
    const s = computeSelection(indexOf(few), params({ minTopicItems: 10 }));
    expect(s.starving).toEqual(['parasitology']);
    expect(s.metrics.size).toBeGreaterThan(1_000);
  });

  it('counts an item once however often it arrives', () => {
    const index = indexOf(items);
    expect(index.add(items[0]!)).toBe(false);
    expect(index.size).toBe(items.length);
  });
});

describe('nthSmallest', () => {
  it('finds the k-th smallest value as a sort would', () => {
    const rand = prng(3);
    for (const n of [1, 2, 3, 10, 1000]) {
      const xs = Float64Array.from({ length: n }, () => Math.floor(rand() * 50) / 50);
      const sorted = Float64Array.from(xs).sort();
      for (const k of [0, Math.floor(n / 2), n - 1])
        expect(nthSmallest(Float64Array.from(xs), k)).toBe(sorted[k]);
    }
  });
});
