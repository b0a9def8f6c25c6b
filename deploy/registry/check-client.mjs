// Manual smoke check of the running registry with @confluentinc/schemaregistry (from the
// repo's node_modules): register a JSON Schema, look it up, and round-trip one record
// through JsonSerializer/JsonDeserializer (Confluent wire format).
//   node deploy/registry/check-client.mjs [baseUrl=http://127.0.0.1:18081/apis/ccompat/v6]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(repo, 'package.json'));
const sr = require('@confluentinc/schemaregistry');

const baseURL = process.argv[2] ?? 'http://127.0.0.1:18081/apis/ccompat/v6';
const client = sr.SchemaRegistryClient.newClient
  ? sr.SchemaRegistryClient.newClient({ baseURLs: [baseURL] })
  : new sr.SchemaRegistryClient({ baseURLs: [baseURL] });
const subject = `deploy-check-${Date.now()}-value`;
const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Check',
  type: 'object',
  properties: { id: { type: 'string' }, n: { type: 'number' } },
  required: ['id'],
};
const info = { schemaType: 'JSON', schema: JSON.stringify(schema) };

const id = await client.register(subject, info);
const id2 = await client.getId(subject, info);
const latest = await client.getLatestSchemaMetadata(subject);
const byId = await client.getBySubjectAndId(subject, id);
const subjects = await client.getAllSubjects();
if (id !== id2 || latest.id !== id || !subjects.includes(subject) || byId.schemaType !== 'JSON')
  throw new Error(`mismatch: ${JSON.stringify({ id, id2, latest, byId, subjects })}`);
console.log(`registered ${subject} id=${id} version=${latest.version}`);

const ser = new sr.JsonSerializer(client, sr.SerdeType.VALUE, {
  useLatestVersion: true,
  autoRegisterSchemas: false,
  validate: true,
});
const de = new sr.JsonDeserializer(client, sr.SerdeType.VALUE, {});
const topic = subject.replace(/-value$/, '');
const bytes = await ser.serialize(topic, { id: 'x1', n: 2 });
if (bytes[0] !== 0 || bytes.readInt32BE(1) !== id) throw new Error('not Confluent wire format');
const back = await de.deserialize(topic, bytes);
if (back.id !== 'x1') throw new Error(`round trip failed: ${JSON.stringify(back)}`);
let rejected = false;
try {
  await ser.serialize(topic, { n: 1 });
} catch {
  rejected = true;
}
if (!rejected) throw new Error('invalid record was not rejected by the JSON Schema');
console.log(`OK ${baseURL}: wire-format round trip, schema id ${id}, invalid record rejected`);
