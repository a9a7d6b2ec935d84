import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTO_TYPE_SETS, readTree, renderProtoTypes } from '../../src/api/generate-proto-types.js';

describe('the generated types of src/api/proto', () => {
  it.each(PROTO_TYPE_SETS.map((set) => [path.relative(process.cwd(), set.outDir), set] as const))(
    '%s is what `npm run protos` generates (run it if this fails)',
    (_, set) => {
      const expected = renderProtoTypes(set);
      const onDisk = readTree(set.outDir);
      expect([...onDisk.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [name, content] of expected) expect(onDisk.get(name), name).toBe(content);
    },
  );
});
