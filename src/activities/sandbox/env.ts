/**
 * A sandbox's environment as its agent gets it: the sealed values opened, and each sealed
 * reference (`envs[].valueFrom` of a Sandbox made with kubectl) read from its Secret or ConfigMap
 * now, in the Sandbox's namespace. Runs only inside createOnAgent, right before the agent call, so
 * a value read here goes to the agent and nowhere else: not into the activity's result (history),
 * not into a log, not into the Sandbox's status.
 *
 * Who may make the fast path read what: the admission webhook admits a Sandbox naming a Secret
 * or ConfigMap only if its creator may `get` it (src/admission/review.ts, sandboxChecks), and
 * the fast path may `get` Secrets and ConfigMaps only in the namespaces a cluster administrator
 * bound deploy/rbac/fastpath.yaml's `durable-operators-fastpath-sandbox-env` to. The fast path's
 * API (fastpath.v1) carries env values only, so tenants cannot name a reference at all.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ENV_CONFIG_ERROR, envSourceValue, type EnvSource } from '../../domain/sandbox-env.js';
import { apiMessage, statusCode, type KubeClient } from '../../kube/client.js';
import type { EnvSealer } from '../../fastpath/sealed-env.js';

/** The Role a namespace binds to let the fast path read its Secrets and ConfigMaps for sandboxes. */
export const SANDBOX_ENV_ROLE = 'durable-operators-fastpath-sandbox-env';

export type ResolvedEnv = { env: Record<string, string> } | { reason: string; message: string };

export function createSandboxEnvResolver(kube: KubeClient, sealer: EnvSealer) {
  async function read(source: EnvSource): Promise<{ data?: Record<string, string> } | undefined | string> {
    try {
      return await kube.get<{ data?: Record<string, string> } & { apiVersion?: string }>({
        apiVersion: 'v1',
        kind: source.kind,
        namespace: source.namespace,
        name: source.name,
      });
    } catch (err) {
      // Forbidden is a missing opt-in, not an outage: said in the status, retried with the placement.
      if (statusCode(err) === 403)
        return (
          `the fast path may not read ${source.kind} ${source.namespace}/${source.name} (${apiMessage(err)}); ` +
          `bind ClusterRole ${SANDBOX_ENV_ROLE} to its ServiceAccount in namespace ${source.namespace}`
        );
      throw ApplicationFailure.retryable(
        `read ${source.kind} ${source.namespace}/${source.name}: ${apiMessage(err)}`,
        'KubernetesUnavailable',
      );
    }
  }

  return {
    /** The env the agent runs the sandbox with, or why it cannot be made (the kubelet's message). */
    async resolve(sealed: Record<string, string>): Promise<ResolvedEnv> {
      const env: Record<string, string> = {};
      // One read per object, however many keys it gives.
      const reads = new Map<string, ReturnType<typeof read>>();
      for (const [name, entry] of Object.entries(sealed)) {
        const opened = sealer.openEntry(name, entry);
        if ('value' in opened) {
          env[name] = opened.value;
          continue;
        }
        const { source } = opened;
        const key = `${source.kind}/${source.namespace}/${source.name}`;
        if (!reads.has(key)) reads.set(key, read(source));
        const object = await reads.get(key)!;
        if (typeof object === 'string') return { reason: ENV_CONFIG_ERROR, message: object };
        const got = envSourceValue(source, object);
        if ('error' in got) return { reason: ENV_CONFIG_ERROR, message: got.error };
        if ('value' in got) env[name] = got.value;
      }
      return { env };
    },
  };
}

export type SandboxEnvResolver = ReturnType<typeof createSandboxEnvResolver>;
