/**
 * Every role checks at start that the namespace has the operator's search attributes: without
 * one, every start is refused `INVALID_ARGUMENT` (the dispatcher then waits, and names it) and
 * every workflow that upserts it fails its task. A missing or mistyped attribute is a readiness
 * failure that names it and the command that registers it; once all are there the check is not
 * repeated. Where the operator API is not allowed (Temporal Cloud: attributes are added with
 * `tcld` or the Cloud UI) the role says so once and does not block.
 */
import { status } from '@grpc/grpc-js';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Logger } from 'pino';
import type { ReadinessCheck } from '../health/probes.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from './search-attributes.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;

/** The indexed type each CLI type name is registered as. */
const INDEXED_TYPE: Record<(typeof SEARCH_ATTRIBUTE_DEFINITIONS)[number]['cliType'], number> = {
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/**
 * What is wrong with a namespace's registered custom attributes (name → indexed type), one
 * phrase per attribute; empty when every attribute the workflows set is there with its type.
 */
export function searchAttributeProblems(registered: Record<string, number>): string[] {
  return SEARCH_ATTRIBUTE_DEFINITIONS.flatMap(({ name, cliType }) => {
    const type = registered[name];
    if (type === undefined) return [`${name} (${cliType}) is not registered`];
    if (type !== INDEXED_TYPE[cliType])
      return [`${name} is registered as ${IndexedValueType[type] ?? type}, not ${cliType}`];
    return [];
  });
}

/** Codes with which a Temporal that does not let this identity use the operator API answers. */
const OPERATOR_API_REFUSED = new Set<number>([status.PERMISSION_DENIED, status.UNIMPLEMENTED]);

export function searchAttributesRegistered(client: Client, log: Logger): ReadinessCheck {
  const namespace = client.options.namespace;
  let settled = false;
  return {
    name: 'search-attributes',
    run: async () => {
      if (settled) return;
      let registered: Record<string, number>;
      try {
        const answer = await client.connection.operatorService.listSearchAttributes({ namespace });
        registered = Object.fromEntries(
          Object.entries(answer.customAttributes ?? {}).map(([name, type]) => [name, Number(type)]),
        );
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code === undefined || !OPERATOR_API_REFUSED.has(code)) throw err;
        settled = true;
        log.warn(
          { namespace, code: status[code] },
          'cannot list the namespace search attributes (operator API not allowed, as on Temporal Cloud): ' +
            'register them with tcld or the Cloud UI (docs/operations.md, Search attributes)',
        );
        return;
      }
      const problems = searchAttributeProblems(registered);
      if (problems.length) {
        throw new Error(
          `namespace ${namespace}: ${problems.join('; ')} — register with ` +
            '`temporal operator search-attribute create` (docs/operations.md, Search attributes)',
        );
      }
      settled = true;
    },
  };
}
