import * as echarts from 'echarts';
import type { Distribution } from './smoothing.js';

export interface PlotSeries {
  readonly name: string;
  readonly shares: Distribution;
}

/**
 * Shares per topic, one bar per series side by side (reference, target, live selection), as an
 * SVG document rendered on the server by Apache ECharts: no browser, no DOM.
 */
export function distributionSvg(opts: {
  readonly title: string;
  readonly categories: readonly string[];
  readonly series: readonly PlotSeries[];
  readonly width?: number;
  readonly height?: number;
}): string {
  const chart = echarts.init(null, null, {
    renderer: 'svg',
    ssr: true,
    width: opts.width ?? Math.max(900, 70 * opts.categories.length),
    height: opts.height ?? 520,
  });
  try {
    chart.setOption({
      animation: false,
      backgroundColor: '#ffffff',
      title: { text: opts.title, left: 'center', textStyle: { fontSize: 14 } },
      legend: { top: 28 },
      grid: { top: 70, bottom: 130, left: 60, right: 20 },
      tooltip: {},
      xAxis: { type: 'category', data: [...opts.categories], axisLabel: { rotate: 40, interval: 0 } },
      yAxis: { type: 'value', name: 'share (%)', axisLabel: { formatter: '{value}%' } },
      series: opts.series.map((s) => ({
        name: s.name,
        type: 'bar',
        data: opts.categories.map((c) => Number((100 * (s.shares[c] ?? 0)).toFixed(2))),
      })),
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}
