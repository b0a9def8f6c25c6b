/**
 * What a broker or a TLS handshake said, turned into the one config key (or ACL) to fix. Both
 * clients' shapes: kafkajs's errors (a name, a protocol error's `type`, a connection error's Node
 * TLS `code`, a `cause` chain) and librdkafka's (a numeric `code` and its message). `kafka check`
 * and `run`'s start use this one mapping.
 */
export interface AccessFault {
  /** The config key to change, or `ACL` where the cluster's ACLs must change instead. */
  readonly key: string;
  /** What is wrong and what to do, in the user's terms. */
  readonly problem: string;
  /** The broker's or the TLS library's own words, quoted. */
  readonly said: string;
}

/** An access fault as an error: one line, key first, the broker quoted. */
export class KafkaAccessError extends Error {
  override readonly name = 'KafkaAccessError';
  constructor(readonly fault: AccessFault) {
    super(`${fault.key}: ${fault.problem} (the broker said: "${fault.said}")`);
  }
}

/** librdkafka's error codes met here (rdkafka.h). */
const RD = {
  AUTHENTICATION: -169,
  SSL: -181,
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  UNSUPPORTED_SASL_MECHANISM: 33,
  SASL_AUTHENTICATION_FAILED: 58,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
} as const;

const AUTHORIZATION: Record<string, string> = {
  TOPIC_AUTHORIZATION_FAILED: 'a topic',
  GROUP_AUTHORIZATION_FAILED: 'a consumer group',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'a transactional id',
  CLUSTER_AUTHORIZATION_FAILED: 'the cluster',
};
const AUTHORIZATION_BY_CODE: Record<number, string> = {
  [RD.TOPIC_AUTHORIZATION_FAILED]: 'TOPIC_AUTHORIZATION_FAILED',
  [RD.GROUP_AUTHORIZATION_FAILED]: 'GROUP_AUTHORIZATION_FAILED',
  [RD.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  [RD.CLUSTER_AUTHORIZATION_FAILED]: 'CLUSTER_AUTHORIZATION_FAILED',
};

/** Node's codes for a certificate no trusted CA signed. */
const UNKNOWN_CA_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
]);

interface ErrorLike {
  readonly name?: string;
  readonly message?: string;
  readonly type?: string;
  readonly code?: string | number;
  readonly cause?: unknown;
  readonly originalError?: unknown;
}

/** The error and those it wraps (kafkajs's retries wrap the cause; some wrap it twice). */
function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  for (let e = err; e && typeof e === 'object' && out.length < 8; ) {
    const like = e as ErrorLike;
    out.push(like);
    e = like.cause ?? like.originalError;
  }
  return out;
}

/** The fault an error stands for, or null where it is no access fault (a broker down, a timeout). */
export function accessFault(err: unknown): AccessFault | null {
  for (const e of chain(err)) {
    const fault = faultOf(e);
    if (fault) return fault;
  }
  return null;
}

function faultOf(e: ErrorLike): AccessFault | null {
  const said = e.message ?? String(e);
  // A config problem found before any connection (a librdkafka build, a secret not set) already names its key.
  if (/^connection\.[a-zA-Z.]+: /.test(said))
    return { key: said.slice(0, said.indexOf(':')), problem: said.slice(said.indexOf(':') + 2), said };
  const authz =
    (e.type && AUTHORIZATION[e.type] ? e.type : undefined) ??
    (typeof e.code === 'number' ? AUTHORIZATION_BY_CODE[e.code] : undefined);
  if (authz)
    return {
      key: 'ACL',
      problem: `the principal may not use ${AUTHORIZATION[authz]} it needs (${authz}): grant what \`bioalchemy kafka acls --principal …\` prints`,
      said,
    };
  if (
    e.type === 'UNSUPPORTED_SASL_MECHANISM' ||
    e.code === RD.UNSUPPORTED_SASL_MECHANISM ||
    /mechanism is not supported by the server|mechanism handshake failed|unsupported sasl mechanism/i.test(
      said,
    )
  )
    return {
      key: 'connection.kafka.sasl.mechanism',
      problem: 'the broker does not offer this SASL mechanism on this listener: use one it offers',
      said,
    };
  if (
    e.name === 'KafkaJSSASLAuthenticationError' ||
    e.type === 'SASL_AUTHENTICATION_FAILED' ||
    e.code === RD.SASL_AUTHENTICATION_FAILED ||
    (e.code === RD.AUTHENTICATION && /sasl|authentication failed|invalid credentials/i.test(said))
  )
    return {
      key: 'connection.kafka.sasl.password',
      problem:
        'SASL authentication failed: the broker refused the user name and password (or client secret); check them and where the config reads the secret',
      said,
    };
  if (
    e.code === 'ERR_TLS_CERT_ALTNAME_INVALID' ||
    /hostname mismatch|does not match certificate's altnames/i.test(said)
  )
    return {
      key: 'connection.kafka.tls.verifyHostname',
      problem:
        "the broker's certificate does not name the host connected to: connect by a name the certificate holds (the log URL's brokers)",
      said,
    };
  if (
    (typeof e.code === 'string' && UNKNOWN_CA_CODES.has(e.code)) ||
    /certificate verify failed|self[- ]signed certificate|unable to (get local issuer|verify the first) certificate/i.test(
      said,
    )
  )
    return {
      key: 'connection.kafka.tls.caFile',
      problem:
        "the broker's certificate is signed by no CA this client trusts: name the CA bundle that signed it",
      said,
    };
  if (e.code === RD.SSL && /unexpected message|client SSL authentication might be required/i.test(said))
    return {
      key: 'connection.kafka.tls.certFile',
      problem: 'the broker asks for a client certificate: set certFile and keyFile',
      said,
    };
  return null;
}

/** The error as the user should see it: an access fault's one line, or the error unchanged. */
export function explainAccess(err: unknown): unknown {
  const fault = accessFault(err);
  return fault ? new KafkaAccessError(fault) : err;
}
