/**
 * The cluster id in the ownership markers across a restore into a new cluster (issue 33, N12):
 * the id a target's SyncState recorded wins over a newly derived one, a pinned one over both,
 * and items of our sources marked with another id are named (a restore without the SyncStates).
 */
import { describe, expect, it } from 'vitest';
import { clusterIdFor, sameSourcesUnderOtherIds } from '../../src/kube/cluster-identity.js';

const derived = () => Promise.resolve('k-new000000000');

describe('the cluster id a target is written with', () => {
  it('is the one its SyncState recorded, not the one this cluster derives', async () => {
    expect(await clusterIdFor('', 'k-old000000000', derived)).toEqual({ clusterId: 'k-old000000000' });
    expect(await clusterIdFor('', undefined, derived)).toEqual({ clusterId: 'k-new000000000' });
  });

  it('is DO_CLUSTER_ID when pinned, naming a recorded id that differs', async () => {
    expect(await clusterIdFor('prod', 'k-old000000000', derived)).toEqual({
      clusterId: 'prod',
      conflict: 'k-old000000000',
    });
    expect(await clusterIdFor('prod', 'prod', derived)).toEqual({ clusterId: 'prod' });
  });
});

describe('items of our sources under another cluster id', () => {
  const ref = { kind: 'ZoneRuleset', namespace: 'team', name: 'waf' };
  it('names the ids that mark the same sources, not other sources or clusters of other sources', () => {
    const descriptions = [
      'block bots [managed-by:k-old000000000:ZoneRuleset/team/waf]',
      '[managed-by:k-other00000000:ZoneRuleset/team/someone-else]',
      '[managed-by:k-new000000000:ZoneRuleset/team/waf]',
      'made by hand',
      undefined,
    ];
    expect(sameSourcesUnderOtherIds(descriptions, [ref], 'k-new000000000')).toEqual(['k-old000000000']);
    expect(sameSourcesUnderOtherIds(descriptions, [], 'k-new000000000')).toEqual([]);
  });
});
