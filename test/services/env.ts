/** Where the services started by deploy/services.sh listen (the test global setup starts them). */
export const KAFKA = process.env.BIOALCHEMY_KAFKA ?? '127.0.0.1:19092';
export const SCHEMA_REGISTRY =
  process.env.BIOALCHEMY_SCHEMA_REGISTRY ?? 'http://127.0.0.1:18081/apis/ccompat/v6';
