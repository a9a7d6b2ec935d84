/**
 * The Gateway API for tests that need it: the upstream CRDs (test/fixtures/crds/gateway-api,
 * verbatim) applied to the stack's apiserver, and waited for until discovery serves them.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { CLOUDFLARE_GROUP } from '../../src/api/cloudflare.js';
import type { KubeClient } from '../../src/kube/client.js';
import { eventually } from './env.js';

export const GATEWAY_API = 'gateway.networking.k8s.io/v1';
const CRD_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/crds/gateway-api');
const KINDS = { gatewayclasses: 'GatewayClass', gateways: 'Gateway', httproutes: 'HTTPRoute' } as const;

/** A GatewayClass whose `parametersRef` is the TunnelGatewayClassConfig `config` of `namespace`. */
export const tunnelGatewayClass = (name: string, config: string, namespace: string) => ({
  apiVersion: GATEWAY_API,
  kind: 'GatewayClass',
  metadata: { name },
  spec: {
    controllerName: 'cloudflare-operator.io/gateway-controller',
    parametersRef: { group: CLOUDFLARE_GROUP, kind: 'TunnelGatewayClassConfig', name: config, namespace },
  },
});

export async function installGatewayApiCrds(kube: KubeClient): Promise<void> {
  for (const [plural, kind] of Object.entries(KINDS)) {
    const crd = parse(
      await readFile(path.join(CRD_DIR, `gateway.networking.k8s.io_${plural}.yaml`), 'utf8'),
    ) as V1CustomResourceDefinition;
    delete crd.status; // the generated placeholder status is not ours to apply
    await kube.apply(crd);
    await eventually(`discovery of ${kind}`, () => kube.objects.servedResource(GATEWAY_API, kind));
  }
}
