/** Every kind the project serves; the CRD generator and the installer iterate this list. */
import { ObjectKeeperKind } from './objectkeeper.js';
import type { KindDefinition } from './kind.js';

export const ALL_KINDS: KindDefinition[] = [ObjectKeeperKind];

export * from './objectkeeper.js';
export { crdOf, type KindDefinition } from './kind.js';
