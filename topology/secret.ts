import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import type { SecretSource } from '../schemas/connection.js';

const HIDDEN = '[secret]';

/**
 * A secret read from where the config names it. Printed, logged or serialised it shows nothing of
 * its value: only a client that needs it calls reveal().
 */
export class Secret {
  readonly #value: string;

  private constructor(value: string) {
    this.#value = value;
  }

  /**
   * Reads the secret `source` names; `key` is its config key, for the error. An environment
   * variable that is not set, or a file that cannot be read, is an error naming both; never the value.
   */
  static read(source: SecretSource, key: string, env: NodeJS.ProcessEnv = process.env): Secret {
    if (source.env !== undefined) {
      const value = env[source.env];
      if (value === undefined || value === '')
        throw new Error(`${key}: the environment variable ${source.env} is not set`);
      return new Secret(value);
    }
    let text: string;
    try {
      text = readFileSync(source.file!, 'utf8');
    } catch (e) {
      throw new Error(`${key}: cannot read ${source.file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const value = text.replace(/\r?\n$/, '');
    if (!value) throw new Error(`${key}: ${source.file} is empty`);
    return new Secret(value);
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return HIDDEN;
  }

  toJSON(): string {
    return HIDDEN;
  }

  [inspect.custom](): string {
    return HIDDEN;
  }
}

/**
 * A PEM file's text (a CA bundle, a certificate, a private key), read at start so that a missing
 * file is an error naming its config key.
 */
export function readPem(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`${key}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}
