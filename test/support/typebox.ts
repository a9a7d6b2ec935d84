/**
 * TypeBox checkers the schema tests need: StringEnum/IntegerEnum are TypeBox `Unsafe` schemas
 * (plain `type` + `enum`), and `date-time` is a string format. Importing this module teaches
 * `Value` to check them (once per process).
 */
import { FormatRegistry, TypeRegistry } from '@sinclair/typebox';

if (!TypeRegistry.Has('Unsafe'))
  TypeRegistry.Set('Unsafe', (schema: Record<string, unknown>, value: unknown) => {
    const type = schema.type;
    if (type === 'string' && typeof value !== 'string') return false;
    if (type === 'integer' && !Number.isInteger(value)) return false;
    if (type === 'object' && (typeof value !== 'object' || value === null || Array.isArray(value))) return false;
    return !Array.isArray(schema.enum) || schema.enum.includes(value);
  });
if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v));
