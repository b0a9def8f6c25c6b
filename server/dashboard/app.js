// The dashboard page: one EventSource on /api/events; each `snapshot` event redraws every panel.
// ECharts is the global the page loads from /assets/echarts.min.js (served from node_modules).
/* global echarts */

const charts = {};
const state = { snapshots: 0, last: null, source: null, redraw: () => draw(state.last) };
// For tests and the curious: window.__dashboard.snapshots counts the snapshots drawn; redraw()
// draws the last one again, as the next snapshot would.
window.__dashboard = state;

function chart(id) {
  if (!charts[id]) {
    charts[id] = echarts.init(document.getElementById(id), null, { renderer: 'canvas' });
    window.addEventListener('resize', () => charts[id].resize());
  }
  return charts[id];
}

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '–'
    : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (x) => (x === null || x === undefined ? null : Math.round(x * 10000) / 100);

function text(id, value) {
  document.getElementById(id).textContent = value;
}

function table(id, head, rows) {
  const el = document.getElementById(id);
  el.replaceChildren();
  const tr = (cells, tag) => {
    const row = document.createElement('tr');
    for (const c of cells) {
      const cell = document.createElement(tag);
      cell.textContent = c;
      row.append(cell);
    }
    el.append(row);
  };
  tr(head, 'th');
  for (const r of rows) tr(r, 'td');
}

const deadLetterRow = (d) => (d.processor ? `${d.code} · ${d.processor}` : d.code);
/** The dead-letter panel's rows by name, kept across snapshots: a row the user opened stays open,
 *  even when a snapshot lands between the click and the toggle event (a rebuilt row came up closed). */
let deadLetterRows = new Map();

/** One row per code and processor under the chart, each opening to its reasons by count. */
function deadLetterReasons(groups) {
  const el = document.getElementById('dead-letter-reasons');
  const kept = new Map();
  for (const g of groups) {
    const row = deadLetterRow(g);
    let details = deadLetterRows.get(row);
    if (!details) {
      details = document.createElement('details');
      details.append(document.createElement('summary'), document.createElement('ul'));
    }
    kept.set(row, details);
    const [summary, list] = details.children;
    summary.textContent = `${fmt(g.n)}  ${row}`;
    list.replaceChildren(
      ...g.reasons.map((r) => {
        const item = document.createElement('li');
        item.textContent = `${fmt(r.n)}  ${r.reason}`;
        return item;
      }),
    );
  }
  deadLetterRows = kept;
  el.replaceChildren(...kept.values());
}

let timeAxis = { type: 'time' };
const legend = { type: 'scroll', top: 0 };
const grid = { left: 50, right: 20, top: 40, bottom: 30, containLabel: true };
const tooltip = { trigger: 'axis' };

function timeSeries(id, t, series, opts = {}) {
  chart(id).setOption(
    {
      animation: false,
      tooltip,
      legend,
      grid,
      xAxis: timeAxis,
      yAxis: { type: 'value', name: opts.unit ?? '', ...(opts.max ? { max: opts.max } : {}) },
      series: series.map((s) => ({
        name: s.name,
        type: 'line',
        // Points only while they are few: a lone bucket still shows.
        showSymbol: s.data.filter((v) => v !== null && v !== 0).length <= 30,
        symbolSize: 5,
        connectNulls: opts.connectNulls ?? false,
        ...(opts.stack ? { stack: 'all', areaStyle: {} } : {}),
        data: s.data.map((v, i) => [t[i], v]),
      })),
    },
    { notMerge: true },
  );
}

function drawTopics(topics) {
  const names = topics.categories.map((c) => c.name);
  chart('chart-topics').setOption(
    {
      animation: false,
      tooltip: { trigger: 'axis', valueFormatter: (v) => (v === null ? 'unknown' : `${v}%`) },
      legend,
      grid: { ...grid, bottom: 90 },
      xAxis: { type: 'category', data: names, axisLabel: { rotate: 35, interval: 0 } },
      yAxis: { type: 'value', name: '% of labels' },
      series: [
        { name: 'dataset', type: 'bar', data: topics.datasetShare.map(pct) },
        { name: 'reference', type: 'bar', data: topics.reference.map(pct) },
        { name: `target mix (α = ${topics.alpha})`, type: 'bar', data: topics.target.map(pct) },
      ],
    },
    { notMerge: true },
  );
  const m = topics.metrics;
  table(
    'mix-metrics',
    [
      'α',
      'mix version',
      'items',
      'size',
      'max/min ratio',
      'avg upsample',
      'yield',
      'TVD to reference',
      'starving',
    ],
    [
      [
        String(topics.alpha),
        topics.mixVersion === null ? 'none yet' : String(topics.mixVersion),
        fmt(m?.items),
        fmt(m?.size),
        m ? `${fmt(m.maxMinRatio, 2)}x` : '–',
        m ? `${fmt(m.averageUpsample, 2)}x` : '–',
        m ? `${fmt(m.yield * 100, 2)}%` : '–',
        m ? fmt(m.tvdReference, 4) : '–',
        topics.starving.join(', ') || 'none',
      ],
    ],
  );
}

// A stalled poller is named with upstream's reason (its tooltip); the rest are counted.
function pollers(list) {
  const el = document.getElementById('pollers');
  const stalled = list.filter((p) => p.state === 'stalled');
  const paused = list.filter((p) => p.state === 'paused');
  el.textContent = stalled.length
    ? stalled.map((p) => `${p.poller} STALLED ${Math.round(p.stalledSeconds / 60)} min`).join(', ')
    : list.length
      ? `${list.length - paused.length} reading${paused.length ? `, ${paused.length} paused upstream` : ''}`
      : 'none';
  el.title = [
    ...stalled.map((p) => `${p.poller}: ${p.stalled.reason}`),
    ...paused.map((p) => `${p.poller}: paused until ${p.paused.until}`),
  ].join('\n');
  el.classList.toggle(
    'alert',
    stalled.some((p) => p.alerting),
  );
}

// Grade's eval-set rejections: the total, and per set and code in the tooltip.
function evalRejections(counts) {
  const el = document.getElementById('eval-rejections');
  const sets = Object.entries(counts);
  el.textContent = sets.length
    ? fmt(sets.reduce((n, [, c]) => n + c.contaminated + c['eval-source'], 0))
    : 'none';
  el.title = sets
    .map(([set, c]) => `${set}: ${c.contaminated} contaminated, ${c['eval-source']} eval-source`)
    .join('\n');
}

function draw(s) {
  // Every time chart spans the whole window, so they line up and a lone point is not a day wide.
  timeAxis = { type: 'time', min: s.window.from * 1000, max: s.window.to * 1000 };
  text('qa-total', fmt(s.totals.qa));
  text('qa-accepted', fmt(s.totals.accepted));
  text('articles-total', fmt(s.totals.articles));
  text('alpha', String(s.topics.alpha));
  text('mix-version', s.totals.mixVersion === null ? 'none' : String(s.totals.mixVersion));
  // What `bioalchemy dlq replay` re-drove, beside the count (the dead letters stay on the topic).
  text(
    'dead-letters',
    fmt(s.totals.deadLetters) +
      (s.totals.deadLettersReplayed ? ` (${fmt(s.totals.deadLettersReplayed)} replayed)` : ''),
  );
  pollers(s.pollers);
  evalRejections(s.evalRejections);
  drawTopics(s.topics);
  timeSeries('chart-drift', s.drift.t, s.drift.series, { max: 1, connectNulls: true });
  timeSeries('chart-qa-source', s.rates.t, s.rates.qaBySource, { unit: 'per minute', stack: true });
  timeSeries('chart-articles-source', s.rates.t, s.rates.articlesBySource, {
    unit: 'per minute',
    stack: true,
  });
  timeSeries('chart-qa-journal', s.rates.t, s.rates.qaByJournal, { unit: 'per minute', stack: true });

  chart('chart-dead-letters').setOption(
    {
      animation: false,
      tooltip,
      grid: { ...grid, left: 10 },
      xAxis: { type: 'value' },
      yAxis: {
        type: 'category',
        inverse: true,
        data: s.deadLetters.map(deadLetterRow),
      },
      series: [{ name: 'dead letters', type: 'bar', data: s.deadLetters.map((d) => d.n) }],
    },
    { notMerge: true },
  );
  deadLetterReasons(s.deadLetters);

  const p = s.processors;
  chart('chart-processors').setOption(
    {
      animation: false,
      tooltip,
      legend,
      grid,
      xAxis: { type: 'category', data: p.map((x) => x.name) },
      yAxis: [
        { type: 'value', name: 'records' },
        { type: 'value', name: 'per second' },
      ],
      series: [
        { name: 'consumer lag', type: 'bar', data: p.map((x) => x.lag) },
        { name: 'in-flight LLM calls', type: 'bar', data: p.map((x) => x.inFlightLlm) },
        { name: 'throughput (records/s)', type: 'line', yAxisIndex: 1, data: p.map((x) => x.perSecond) },
      ],
    },
    { notMerge: true },
  );
  table(
    'processors-table',
    ['processor', 'committed', 'records/s', 'lag', 'errors', 'in-flight LLM'],
    p.map((x) => [
      x.name,
      fmt(x.committed),
      fmt(x.perSecond, 1),
      fmt(x.lag),
      fmt(x.errors),
      fmt(x.inFlightLlm),
    ]),
  );

  const cap = s.llm.usdPerDay;
  timeSeries(
    'chart-llm-cost',
    s.llm.t,
    s.llm.costByStage.concat([
      {
        name:
          cap === null ? 'spent today (no cap set)' : `spent today $${fmt(s.llm.spentTodayUsd, 4)} of cap`,
        data: s.llm.t.map(() => null),
      },
    ]),
    { unit: 'USD', stack: true },
  );
  if (cap !== null) {
    chart('chart-llm-cost').setOption({
      series: [
        {
          markLine: {
            symbol: 'none',
            data: [{ name: 'daily cap', yAxis: cap }],
            label: { formatter: 'cap $ {c}' },
          },
        },
      ],
    });
  }
  const u = s.llm.usage;
  const label = (x) => `${x.stage} · ${x.model}`;
  chart('chart-llm-usage').setOption(
    {
      animation: false,
      tooltip,
      legend,
      grid,
      xAxis: { type: 'category', data: u.map(label), axisLabel: { rotate: 20 } },
      yAxis: [
        { type: 'value', name: 'calls' },
        { type: 'value', name: 'ms' },
      ],
      series: [
        { name: 'paid calls', type: 'bar', stack: 'calls', data: u.map((x) => x.paid) },
        { name: 'journal hits', type: 'bar', stack: 'calls', data: u.map((x) => x.journalHits) },
        { name: 'latency p50 (ms)', type: 'line', yAxisIndex: 1, data: u.map((x) => x.p50Ms) },
        { name: 'latency p95 (ms)', type: 'line', yAxisIndex: 1, data: u.map((x) => x.p95Ms) },
      ],
    },
    { notMerge: true },
  );
  table(
    'llm-table',
    ['stage · model', 'calls', 'tokens in', 'tokens out', 'cost USD', 'today USD', 'p95 ms'],
    u.map((x) => [
      label(x),
      fmt(x.calls),
      fmt(x.inputTokens),
      fmt(x.outputTokens),
      fmt(x.costUsd, 4),
      fmt(x.costTodayUsd, 4),
      fmt(x.p95Ms),
    ]),
  );

  const ranks = s.feeder.ranks;
  chart('chart-feeder').setOption(
    {
      animation: false,
      tooltip,
      legend,
      grid,
      xAxis: { type: 'category', data: ranks.map((r) => `${r.run} · rank ${r.rank}`) },
      yAxis: { type: 'value', name: 'batches' },
      series: [
        { name: 'leased', type: 'bar', data: ranks.map((r) => r.leased) },
        { name: 'acked', type: 'bar', data: ranks.map((r) => r.acked) },
      ],
    },
    { notMerge: true },
  );
  // Backpressure: what ranks waited for their answers since the last refresh, and how late the
  // feeder's event loop ran (work in its process delays every answer by as much).
  const answers = s.feeder.answers;
  const ms = (x) => (x === null ? '–' : x.toFixed(1));
  table(
    'feeder-answers',
    ['since the last refresh', 'p50 ms', 'p99 ms', 'count'],
    [
      ['lease answered', answers.lease],
      ['ack answered', answers.ack],
      ['feeder event-loop delay', answers.loopDelay],
    ].map(([name, q]) => [name, ms(q.p50Ms), ms(q.p99Ms), fmt(q.count)]),
  );
  // Feeding by difficulty: rollouts in groups whose rewards all agreed taught nothing; band-pass
  // sets such items aside (README, feeding by difficulty).
  table(
    'feeder-difficulty',
    ['run', 'rollouts acked', 'flat groups', 'times set aside'],
    s.feeder.runs.map((r) => [r.run, fmt(r.rollouts), fmt(r.flatGroups), fmt(r.setAside)]),
  );
  timeSeries('chart-rewards', s.feeder.t, s.feeder.rewardByTopic, { max: 1, connectNulls: true });

  const t = Object.entries(s.timings)
    .map(([k, v]) => `${k} ${v} ms`)
    .join(', ');
  text(
    'footer',
    `updated ${new Date(s.at).toISOString()} · window ${s.window.span} s, step ${s.window.step} s · ${t}`,
  );
  state.snapshots++;
  state.last = s;
}

function connect() {
  state.source?.close();
  const windowSeconds = document.getElementById('window').value;
  const source = new EventSource(`/api/events?window=${windowSeconds}`);
  state.source = source;
  const status = document.getElementById('status');
  source.addEventListener('snapshot', (e) => {
    status.textContent = 'live';
    status.className = 'live';
    draw(JSON.parse(e.data));
  });
  source.addEventListener('failure', (e) => {
    status.textContent = `query failed: ${JSON.parse(e.data).reason}`;
    status.className = 'down';
  });
  source.onerror = () => {
    status.textContent = 'reconnecting';
    status.className = 'down';
  };
}

document.getElementById('window').addEventListener('change', connect);
connect();
