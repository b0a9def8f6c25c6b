#!/usr/bin/env bash
# Run in the image's deps stage on /app/node_modules (production dependencies only): removes what
# no code path of the app loads, then checks that what it loads still does. BENCHMARKS.md lists
# the sizes. Each line says why the files are not needed.
set -euo pipefail
cd /app/node_modules
# Native build trees: sources, objects, static archives (the addons link librdkafka.so.1 and
# better-sqlite3 statically); the shared objects stripped of symbols.
rm -rf node-rdkafka/deps/librdkafka node-rdkafka/build/deps/include node-rdkafka/build/deps/*.a \
  node-rdkafka/build/deps/pkgconfig node-rdkafka/build/Release/obj.target node-rdkafka/build/Release/.deps \
  better-sqlite3/deps better-sqlite3/src better-sqlite3/build/Release/obj.target \
  better-sqlite3/build/Release/.deps better-sqlite3/build/Release/test_extension.node
find node-rdkafka/build better-sqlite3/build -type f \( -name '*.node' -o -name '*.so*' \) \
  -exec strip --strip-unneeded {} +
# echarts: the dashboard serves dist/echarts.min.js to the browser (server/dashboard.ts), nothing else.
find echarts/dist -type f ! -name echarts.min.js -delete
rm -rf echarts/lib echarts/types echarts/src echarts/ssr echarts/extension echarts/i18n echarts/theme echarts/asset zrender/src zrender/dist
# pdf.js: sources/pdf.ts loads legacy/build/pdf.mjs and the standard fonts; not the modern build, nor the viewer.
rm -rf pdfjs-dist/build pdfjs-dist/web pdfjs-dist/types pdfjs-dist/image_decoders pdfjs-dist/legacy/web pdfjs-dist/legacy/image_decoders
# Source maps, type declarations, TypeScript sources and docs, everywhere.
find . -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.ts' \
  -o -iname 'README*' -o -iname 'CHANGELOG*' -o -iname 'HISTORY*' -o -name '*.markdown' \) -delete
# Scoped folders npm made and left empty (of omitted packages).
find . -mindepth 1 -type d -empty -delete
# What the app loads from them, loaded again.
cd /app
node -e "
  require('better-sqlite3')(':memory:').prepare('select 1').get();
  require('node-rdkafka').librdkafkaVersion;
  require('fs').statSync(require.resolve('echarts/dist/echarts.min.js'));
  require('fs').statSync(require.resolve('pdfjs-dist/package.json').replace('package.json', 'standard_fonts'));
"
node --input-type=module -e "await import('pdfjs-dist/legacy/build/pdf.mjs'); await import('@confluentinc/schemaregistry'); await import('kafkajs'); await import('@clickhouse/client'); await import('openai'); await import('fastify'); await import('apache-arrow'); await import('parquet-wasm')"
