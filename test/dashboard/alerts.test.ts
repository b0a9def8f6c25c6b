import { readFileSync } from 'node:fs';
import { Histogram } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Analytics } from '../../analytics/clickhouse.js';
import { LlmMetrics } from '../../llm/metrics.js';
import { Feeder } from '../../processors/feeder/feeder.js';
import { registerDashboardMetrics } from '../../server/dashboard-metrics.js';
import { EngineMetrics } from '../../topology/metrics.js';

const root = new URL('../../', import.meta.url).pathname;

/** Every metric name `bioalchemy run` exports on /metrics: the engine's, the LLM layer's, the mix and feeder gauges. */
function exported(): Set<string> {
  const engine = new EngineMetrics();
  new LlmMetrics(engine.registry);
  const feeder = Feeder.open(':memory:');
  registerDashboardMetrics(engine.registry, { analytics: {} as Analytics, feeder });
  const names = new Set<string>();
  for (const m of engine.registry.getMetricsAsArray()) {
    names.add(m.name);
    // A histogram's series.
    if (m instanceof Histogram)
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${m.name}${suffix}`);
  }
  feeder.close();
  return names;
}

const metricsIn = (expr: string) => [...new Set(expr.match(/\bbioalchemy_[a-z0-9_]+\b/g) ?? [])];

describe('alert rules and Grafana dashboards', () => {
  const names = exported();

  it('exports the metrics the issue names: lag, throughput, errors, LLM latency histograms, feeder leases', () => {
    for (const n of [
      'bioalchemy_consumer_lag',
      'bioalchemy_records_in_total',
      'bioalchemy_step_errors_total',
      'bioalchemy_llm_latency_seconds_bucket',
      'bioalchemy_feeder_rank_batches',
      'bioalchemy_llm_in_flight',
    ])
      expect(names).toContain(n);
  });

  it('every alert expression names only metrics the project exports', () => {
    const text = readFileSync(`${root}deploy/prometheus/alerts.yml`, 'utf8');
    const alerts = [...text.matchAll(/^\s*- alert: (\S+)$/gm)].map((m) => m[1]);
    const exprs = [...text.matchAll(/^\s*expr: (.+)$/gm)].map((m) => m[1]!);
    expect(alerts).toEqual([
      'BioalchemyMixDrift',
      'BioalchemyProcessorStuck',
      'BioalchemyDeadLettersRising',
      'BioalchemySpendNearCap',
      'BioalchemyBudgetPaused',
      'BioalchemyPollerStalled',
    ]);
    expect(exprs).toHaveLength(alerts.length);
    for (const expr of exprs) {
      const used = metricsIn(expr);
      expect(used.length, expr).toBeGreaterThan(0);
      for (const m of used) expect(names, `${m} in: ${expr}`).toContain(m);
    }
  });

  it('the dead-letter alert groups by labels the counter has: processor and code', async () => {
    const text = readFileSync(`${root}deploy/prometheus/alerts.yml`, 'utf8');
    const expr = text.match(/- alert: BioalchemyDeadLettersRising\n\s*expr: (.+)/)![1]!;
    const groupings = [...expr.matchAll(/by \(([^)]*)\) \(rate\(bioalchemy_dead_letters_total/g)].map(
      (m) => m[1],
    );
    expect(groupings).toEqual(['processor, code', 'processor, code', 'processor, code']);
    const engine = new EngineMetrics();
    engine.deadLetters.inc({ processor: 'extract', code: 'not-english' });
    const [value] = (await engine.deadLetters.get()).values;
    expect(Object.keys(value!.labels).sort()).toEqual(['code', 'processor']);
  });

  it('the Prometheus dashboard queries only exported metrics; the ClickHouse one only tables the migrations make', () => {
    const prom = JSON.parse(
      readFileSync(`${root}deploy/grafana/dashboards/bioalchemy-prometheus.json`, 'utf8'),
    ) as {
      panels: { targets: { expr: string }[] }[];
    };
    const used = prom.panels.flatMap((p) => p.targets.flatMap((t) => metricsIn(t.expr)));
    expect(used.length).toBeGreaterThan(10);
    for (const m of used) expect(names).toContain(m);
    const ch = JSON.parse(
      readFileSync(`${root}deploy/grafana/dashboards/bioalchemy-clickhouse.json`, 'utf8'),
    ) as {
      panels: { targets: { rawSql: string }[] }[];
    };
    const migrations = readFileSync(`${root}deploy/clickhouse/migrations/0001_qa.sql`, 'utf8');
    expect(migrations).toContain('CREATE TABLE IF NOT EXISTS qa');
    for (const p of ch.panels)
      for (const t of p.targets)
        for (const [, table] of t.rawSql.matchAll(/FROM (\w+)/g))
          expect(['qa', 'topic_counts', 'mix_history', 'llm_calls', 'rewards']).toContain(table);
  });
});
