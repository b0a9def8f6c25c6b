/**
 * The layers of ../shared/DESIGN.md as code: imports point down this list, never up.
 *   schemas <- topology <- sources, analytics, llm, reward <- processors <- server <- cli
 * schemas import only zod and node; the engine (topology) knows no ClickHouse, no LLM and no
 * processor; nothing imports cli but the bin/ entry point; no import cycles, type-only included.
 * `npm run lint` runs it, and CI runs `npm run lint`.
 */
const LAYERS = {
  schemas: [],
  topology: ['schemas'],
  analytics: ['schemas', 'topology'],
  llm: ['schemas', 'topology'],
  // The verifiable reward reads records and its own rule table: nothing of the engine.
  reward: ['schemas'],
  // Readers, pollers and passages: articles in, with the state a work's records share.
  sources: ['schemas', 'topology'],
  processors: ['schemas', 'topology', 'sources', 'analytics', 'llm', 'reward'],
  server: ['schemas', 'topology', 'sources', 'analytics', 'llm', 'reward', 'processors'],
  cli: ['schemas', 'topology', 'sources', 'analytics', 'llm', 'reward', 'processors', 'server'],
};
const names = Object.keys(LAYERS);

const layerRules = names.map((layer) => {
  const above = names.filter((other) => other !== layer && !LAYERS[layer].includes(other));
  return {
    name: `layer-${layer}`,
    comment: `${layer}/ may import only ${LAYERS[layer].join(', ') || 'zod and node'} (see ../shared/DESIGN.md, "Layout and layers")`,
    severity: 'error',
    from: { path: `^${layer}/` },
    to: { path: `^(${[...above, 'test', 'bench'].join('|')})/` },
  };
});

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'an import cycle, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'nothing-imports-cli',
      comment: 'cli/ is wiring only: nothing but the bin/ entry point imports it',
      severity: 'error',
      from: { pathNot: '^(cli|bin)/' },
      to: { path: '^cli/' },
    },
    {
      name: 'schemas-only-zod',
      comment: 'schemas/ import only zod and node',
      severity: 'error',
      from: { path: '^schemas/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        pathNot: 'node_modules/zod/',
      },
    },
    {
      name: 'engine-knows-no-clickhouse-or-llm',
      comment: 'the engine reaches ClickHouse and LLMs only through what a processor brings (stores, sinks)',
      severity: 'error',
      from: { path: '^topology/' },
      to: { path: 'node_modules/(@clickhouse|chdb|openai|node-llama-cpp)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import that resolves to nothing',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(data|dist|\\.deploy|\\.cache|\\.git)/' },
    includeOnly:
      '^(schemas|topology|analytics|llm|reward|processors|server|cli|bin|test|bench)/|node_modules',
    // Type-only imports count: a cycle through types is still a cycle in the design.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.json'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
    moduleSystems: ['es6', 'cjs'],
  },
};
