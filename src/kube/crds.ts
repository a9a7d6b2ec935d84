/** Installs the project's CRDs (server-side apply) and waits until the apiserver serves them. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { ALL_KINDS, crdOf } from '../api/index.js';
import { KubeClient } from './client.js';

export async function installCrds(kubeconfig?: string, timeoutMs = 60_000): Promise<void> {
  const kube = KubeClient.fromKubeconfig(kubeconfig);
  const crds = ALL_KINDS.map((k) => crdOf(k) as unknown as V1CustomResourceDefinition);
  for (const crd of crds) await kube.apply(crd);
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata!.name!;
    for (;;) {
      const live = await kube.apiextensions.readCustomResourceDefinition({ name });
      if (live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs} ms`);
      await sleep(200);
    }
  }
}
