import { writeFileSync } from 'node:fs';
import { openClickHouse } from '../analytics/clickhouse.js';
import { forEachQaItem } from '../analytics/qa-store.js';
import { DuplicatesRemoved, type DuplicatesRemovedCounts } from '../processors/dedup/removed.js';
import { type EvalRejectionCounts, EvalRejectionTally } from '../processors/qa/decontaminate.js';
import {
  type DatasetRow,
  fullDatasetRow,
  mixDatasetRow,
  type ReferenceFigures,
  referenceFigures,
} from '../processors/sampler/figures.js';
import { selectionParams } from '../processors/sampler/mix.js';
import { distributionSvg } from '../processors/sampler/plot.js';
import { computeSelection, ItemIndex, type Selection } from '../processors/sampler/selection.js';
import { normalise } from '../processors/sampler/smoothing.js';
import { knownCounts, loadReference, type Reference } from '../schemas/reference.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import { configOf, forEachLogValue } from './context.js';
import type { GlobalOptions } from './usage.js';

export interface MixOptions extends GlobalOptions {
  alpha?: number;
  json?: boolean;
  plot?: string;
  reference?: string;
}

interface Live {
  readonly index: ItemIndex;
  readonly selection: Selection;
}

export async function mix(opts: MixOptions): Promise<void> {
  const config = configOf(opts);
  const alpha = opts.alpha ?? config.sampler.alpha;
  const reference = loadReference(opts.reference ?? config.sampler.reference);
  const taxonomy = loadTaxonomy(config.taxonomy);
  const figures = referenceFigures(reference, alpha);
  const index = new ItemIndex();
  const analytics = await openClickHouse(config.clickhouse, { connection: config.connection.clickhouse });
  try {
    await forEachQaItem(analytics, (item) => index.add(item));
  } finally {
    await analytics.close();
  }
  // Grade's eval-set rejections, from the log: what decontamination kept out of the mix, per set.
  const evalRejections = new EvalRejectionTally();
  const duplicates = new DuplicatesRemoved();
  await forEachLogValue(config, 'qa.rejected', (v) => {
    evalRejections.add(v);
    duplicates.addRejected(v);
  });
  await forEachLogValue(config, 'articles', (v) => duplicates.addArticle(v));
  await forEachLogValue(config, 'qa.withdrawn', () => duplicates.addWithdrawn());
  const params = selectionParams(config.sampler, reference, alpha);
  const live: Live | null = index.size ? { index, selection: computeSelection(index, params) } : null;
  const referenceCounts = knownCounts(reference).counts;
  const full = live
    ? fullDatasetRow(live.selection.observed, live.selection.metrics.items, referenceCounts)
    : null;
  const names = new Map(taxonomy.categories.map((c) => [c.id, c.name]));
  const name = (id: string) => names.get(id) ?? id;

  if (opts.plot) {
    const categories = [
      ...new Set([...Object.keys(referenceCounts), ...Object.keys(live?.selection.observed ?? {})]),
    ];
    const series = [
      { name: 'reference', shares: normalise(referenceCounts) },
      {
        name: `target (α = ${alpha})`,
        shares: Object.fromEntries(figures.rows.map((r) => [r.category, r.smoothed])),
      },
    ];
    if (live) series.push({ name: 'live selection', shares: selectionShares(live) });
    writeFileSync(
      opts.plot,
      distributionSvg({
        title: `${reference.name}: reference, α-smoothed target and live selection`,
        categories: categories.map(name),
        series: series.map((s) => ({
          name: s.name,
          shares: Object.fromEntries(Object.entries(s.shares).map(([c, v]) => [name(c), v])),
        })),
      }),
    );
  }

  if (opts.json) {
    const out = {
      reference: { name: reference.name, total: reference.total, unknown: figures.unknown },
      alpha,
      table13: { ...figures, rows: figures.rows.map((r) => ({ ...r, name: name(r.category) })) },
      live: live
        ? {
            full,
            mix: mixDatasetRow(live.selection, alpha),
            metrics: live.selection.metrics,
            quotas: live.selection.quotas,
            observed: live.selection.observed,
            selected: selectionShares(live),
            starving: live.selection.starving,
            heldOut: config.sampler.heldOut,
          }
        : null,
      evalRejections: evalRejections.counts,
      duplicatesRemoved: duplicates.counts,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  process.stdout.write(
    `${[...table13Lines(reference, figures, name), ...liveLines(live, full, alpha, config.sampler.heldOut), ...evalRejectionLines(evalRejections.counts, config.grade.evalSets), ...duplicateLines(duplicates.counts)].join('\n')}\n`,
  );
}

/** Duplicates kept out of the dataset, by kind (README: what counts as a duplicate). */
function duplicateLines(c: DuplicatesRemovedCounts): string[] {
  const r = c.records;
  const q = c.questions;
  return [
    'duplicates removed:',
    `  records folded into works: ${r.id + r.relation + r.text + r['near-text']} (${c.worksWithCopies} works with copies): by id ${r.id}, by declared relation ${r.relation}, same abstract ${r.text}, near-identical abstract ${r['near-text']}`,
    `  questions refused: ${q['same-candidate'] + q.exact + q.near}: the same question ${q.exact}, a near-duplicate ${q.near}, the same candidate again ${q['same-candidate']}`,
    `  accepted questions withdrawn: ${q.withdrawn} (a duplicate that comes before them, by publication date then id, arrived later)`,
  ];
}

/** Per eval set, the QA grade kept out of the mix: `  pubmedqa: 12 contaminated, 3 eval-source`. */
function evalRejectionLines(counts: EvalRejectionCounts, configured: readonly string[]): string[] {
  const sets = Object.entries(counts);
  if (!sets.length && !configured.length) return [];
  return [
    `kept out by eval sets (grade.evalSets)${sets.length ? ':' : ': none rejected'}`,
    ...sets.map(([set, c]) => `  ${set}: ${c.contaminated} contaminated, ${c['eval-source']} eval-source`),
  ];
}

/** Label shares of the live selection over the topics it serves. */
function selectionShares(live: Live): Record<string, number> {
  const { index, selection } = live;
  const labels: Record<string, number> = {};
  for (let i = 0; i < index.size; i++) {
    const copies = selection.copies[i]!;
    if (copies === 0) continue;
    for (const t of index.topicsOf(i)) if (t in selection.quotas) labels[t] = (labels[t] ?? 0) + copies;
  }
  return normalise(labels);
}

const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
const int = (n: number) => Math.round(n).toLocaleString('en-US');

function table13Lines(ref: Reference, f: ReferenceFigures, name: (id: string) => string): string[] {
  const lines = [
    `reference ${ref.name}: ${ref.total === null ? 'no total' : `${int(ref.total)} articles`}; ${f.rows.length} categories known, ${f.unknown.length} unknown`,
    '',
    `rank  ${'subcategory'.padEnd(28)}${'count'.padStart(9)}${'%'.padStart(9)}   α = ${f.alpha}`,
  ];
  for (const r of f.rows) {
    lines.push(
      `${String(r.rank).padEnd(6)}${name(r.category).padEnd(28)}${`${r.fromShare ? '*' : ''}${int(r.count)}`.padStart(9)}${pct(r.share).padStart(9)}   ${pct(r.smoothed)} (${r.upsample.toFixed(1)}x)`,
    );
  }
  lines.push(
    `topic max/min ratio ${f.maxMinRatio.toFixed(1)}x, average upsample ${f.averageUpsample.toFixed(2)}x`,
  );
  if (f.partial)
    lines.push(
      `shares at α = ${f.alpha} are of the ${f.rows.length} known categories (Σ n^α needs the ${f.unknown.length} unknown counts); ratios between rows are exact`,
    );
  if (f.unknown.length) lines.push(`unknown: ${f.unknown.map(name).join(', ')}`);
  return lines;
}

function liveLines(
  live: Live | null,
  full: DatasetRow | null,
  alpha: number,
  heldOut: { topics: string[]; publishedFrom: string | null; sources: string[] },
): string[] {
  if (!live || !full) return ['', 'no QA in ClickHouse yet: the figures above are from the reference alone'];
  const m = live.selection.metrics;
  const row = (d: DatasetRow) =>
    `${d.dataset.padEnd(12)}${int(d.size).padStart(10)}${`${d.maxMinRatio.toFixed(1)}x`.padStart(15)}${`${d.averageUpsample.toFixed(1)}x`.padStart(15)}${pct(d.yield).padStart(14)}${d.tvdReference.toFixed(2).padStart(18)}`;
  const rules = [
    heldOut.topics.length ? `topics ${heldOut.topics.join(', ')}` : '',
    heldOut.publishedFrom ? `published from ${heldOut.publishedFrom}` : '',
    heldOut.sources.length ? `sources ${heldOut.sources.join(', ')}` : '',
  ].filter(Boolean);
  return [
    '',
    `live: ${int(m.items + m.heldOut)} accepted QA items in ClickHouse`,
    `${'dataset'.padEnd(12)}${'size'.padStart(10)}${'topic max/min'.padStart(15)}${'avg. upsample'.padStart(15)}${'sample yield'.padStart(14)}${'TVD to reference'.padStart(18)}`,
    row(full),
    row(mixDatasetRow(live.selection, alpha)),
    `selection vs target: TVD ${m.tvdTarget.toFixed(4)}, Jensen-Shannon distance ${m.jsTarget.toFixed(4)}; ${int(m.distinct)} distinct items`,
    `held out for evaluation: ${int(m.heldOut)} items${rules.length ? ` (${rules.join('; ')})` : ' (no rule set: sampler.heldOut)'}`,
    // Counted, never dropped silently: a QA classify left without a confident label is in no topic.
    `unlabelled (no label reached classify.minConfidence): ${int(m.unlabelled)} items, in no topic's quota`,
    ...(live.selection.starving.length
      ? [`starving (too few items to serve): ${live.selection.starving.join(', ')}`]
      : []),
  ];
}
