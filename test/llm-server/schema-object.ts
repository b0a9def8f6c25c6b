type Schema = Record<string, unknown> | boolean;

const WORDS = [
  'cell',
  'gene',
  'protein',
  'enzyme',
  'tissue',
  'membrane',
  'receptor',
  'pathway',
  'neuron',
  'species',
];

/**
 * A value valid for a JSON Schema (the subset zod's toJSONSchema emits: objects, arrays, strings
 * with lengths and formats, numbers with bounds, enums, consts, unions, $ref), drawn from `random`,
 * so that the same prompt always gets the same value. String `pattern`s are not honoured: give the
 * server a responder for schemas that use them.
 */
export function objectForSchema(root: Schema, random: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

  const resolve = (ref: string): Schema => {
    if (ref === '#') return root;
    const path = ref.replace(/^#\//, '').split('/');
    let node: unknown = root;
    for (const part of path) node = (node as Record<string, unknown>)?.[part];
    if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
    return node as Schema;
  };

  const string = (s: Record<string, unknown>): string => {
    switch (s.format) {
      case 'date-time':
        return new Date(Date.UTC(2020, 0, int(1, 1500))).toISOString();
      case 'date':
        return new Date(Date.UTC(2020, 0, int(1, 1500))).toISOString().slice(0, 10);
      case 'email':
        return `${pick(WORDS)}@example.org`;
      case 'uri':
      case 'url':
        return `https://example.org/${pick(WORDS)}`;
      case 'uuid':
        return '00000000-0000-4000-8000-000000000000'.replace(/0/g, () => int(0, 15).toString(16));
    }
    const min = (s.minLength as number | undefined) ?? 1;
    const max = (s.maxLength as number | undefined) ?? Math.max(min, 40);
    let text = pick(WORDS);
    while (text.length < min) text += ` ${pick(WORDS)}`;
    return text.slice(0, max);
  };

  const number = (s: Record<string, unknown>, integer: boolean): number => {
    const exMin = s.exclusiveMinimum as number | undefined;
    const exMax = s.exclusiveMaximum as number | undefined;
    let lo = (s.minimum as number | undefined) ?? exMin ?? 0;
    let hi = (s.maximum as number | undefined) ?? exMax ?? lo + 100;
    if (integer) {
      lo = exMin !== undefined && lo === exMin ? Math.floor(lo) + 1 : Math.ceil(lo);
      hi = exMax !== undefined && hi === exMax ? Math.ceil(hi) - 1 : Math.floor(hi);
      return int(lo, hi);
    }
    const value = Math.round((lo + random() * (hi - lo)) * 1000) / 1000;
    return Math.min(
      Math.max(value, exMin !== undefined ? lo + 1e-3 : lo),
      exMax !== undefined ? hi - 1e-3 : hi,
    );
  };

  const value = (schema: Schema, depth: number): unknown => {
    if (typeof schema === 'boolean') return null;
    if (typeof schema.$ref === 'string') return value(resolve(schema.$ref), depth + 1);
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum)) return pick(schema.enum);
    const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
    if (union) {
      const concrete = union.filter((s) => typeof s !== 'object' || s.type !== 'null');
      return value(pick(concrete.length ? concrete : union), depth + 1);
    }
    if (Array.isArray(schema.allOf)) return value(schema.allOf[0] as Schema, depth + 1);
    let type = schema.type;
    if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? 'null';
    if (type === undefined && schema.properties) type = 'object';
    switch (type) {
      case 'object': {
        const props = (schema.properties ?? {}) as Record<string, Schema>;
        return Object.fromEntries(Object.entries(props).map(([k, s]) => [k, value(s, depth + 1)]));
      }
      case 'array': {
        const min = (schema.minItems as number | undefined) ?? 0;
        const max = (schema.maxItems as number | undefined) ?? Math.max(min, 3);
        // Deep (recursive) schemas get the fewest items allowed, so the value stays finite.
        const n = depth > 6 ? min : int(Math.max(min, Math.min(1, max)), Math.min(max, Math.max(min, 3)));
        if (Array.isArray(schema.prefixItems)) {
          return (schema.prefixItems as Schema[]).map((s) => value(s, depth + 1));
        }
        return Array.from({ length: n }, () => value((schema.items ?? {}) as Schema, depth + 1));
      }
      case 'string':
        return string(schema);
      case 'integer':
        return number(schema, true);
      case 'number':
        return number(schema, false);
      case 'boolean':
        return random() < 0.5;
      case 'null':
        return null;
      default:
        return pick(WORDS);
    }
  };

  return value(root, 0);
}
