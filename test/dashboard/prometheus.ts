/**
 * Parses Prometheus text exposition format (0.0.4) strictly: every line is a comment (# HELP,
 * # TYPE) or `name{label="value",...} number`; anything else throws naming the line. Returns the
 * samples keyed by name plus labels as written.
 */
export function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  // NaN in any case: Prometheus reads values with Go's strconv.ParseFloat, which takes "nan"
  // case-insensitively, and prom-client writes a gauge with no sample yet (the event loop's lag
  // just after start) as "Nan".
  const sample =
    /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.eE+-]+|[nN][aA][nN]|\+Inf|-Inf)( -?\d+)?$/;
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = line.match(/^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/);
      if (!m) throw new Error(`line ${i + 1}: not a HELP or TYPE comment: ${line}`);
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3]!))
          throw new Error(`line ${i + 1}: unknown type ${m[3]}`);
        types.set(m[2]!, m[3]!);
      }
      return;
    }
    const m = line.match(sample);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const family = m[1]!.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(m[1]!) && !types.has(family)) throw new Error(`line ${i + 1}: ${m[1]} has no TYPE`);
    samples.set(`${m[1]}${m[2] ?? ''}`, /^nan$/i.test(m[3]!) ? Number.NaN : Number(m[3]));
  });
  return samples;
}

/** Metric family names a sample set holds (histogram suffixes kept as their own names too). */
export function metricNames(samples: Map<string, number>): Set<string> {
  const names = new Set<string>();
  for (const key of samples.keys()) names.add(key.replace(/\{.*$/, ''));
  return names;
}

/**
 * The sum of a metric's samples whose labels include `labels` (others, such as the `worker` every
 * sample of `run` carries, may be there too).
 */
export function sampleValue(
  samples: Map<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const [key, v] of samples) {
    const brace = key.indexOf('{');
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, val]) => key.includes(`${k}="${val}"`))) sum += v;
  }
  return sum;
}
