/** Request bodies checked with TypeBox; a mismatch is the real API's 400 "Request body is invalid." */
import type { Static, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { CfErrors } from './envelope.js';

export function checkBody<S extends TSchema>(schema: S, body: unknown): Static<S> {
  if (Value.Check(schema, body)) return body;
  const details = [...Value.Errors(schema, body)].slice(0, 5).map((e) => `${e.path || '/'}: ${e.message}`);
  throw CfErrors.invalidBody(details);
}
