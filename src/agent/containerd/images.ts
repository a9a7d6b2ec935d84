/**
 * The images the agent runs sandboxes from: pulled through containerd (its CRI image service,
 * with the pool's registry credentials), unpacked into the snapshotter, and read once for what a
 * container needs — the image config (entrypoint, cmd, env, user, working dir) and the chain ID
 * of its top layer, the parent of each sandbox's writable snapshot. Pull policy IfNotPresent, as
 * Kubernetes' default for tagged images: an image present in containerd is not downloaded again.
 *
 * But presence is not permission (review N5): containerd's `k8s.io` store is the node's, shared
 * with the kubelet and every pool, so a private image another team's Pod or pool pulled is there
 * too. An image this agent did not pull itself is re-authorised with the registry, with this
 * pool's credentials, before a sandbox uses it — a pull through the CRI, which for an image
 * already present fetches only its manifest (as Kubernetes' AlwaysPullImages and KEP-2535's
 * "ensure secret-pulled images" do). A success is remembered per image and credentials for
 * `RECHECK_AFTER_MS`, so the create path pays that round trip at most once in that time.
 */
import { createHash } from 'node:crypto';
import type { ContainerdClient, Descriptor } from './client.js';
import { readUserFiles, resolveNamedUser } from './image-users.js';
import type { ImageConfig } from './oci-spec.js';
import { SandboxSpecError } from '../runtime.js';

export interface ResolvedImage {
  /** As the sandbox named it (what the agent reports in `images[]`). */
  ref: string;
  /** containerd's image ID (`sha256:<config digest>`), also a name of the image in its store. */
  id: string;
  config: ImageConfig;
  chainId: string;
  /** True when this resolution pulled it. */
  pulled: boolean;
}

/** Registry credentials for a pull (an image pull Secret's `.dockerconfigjson` entry). */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
}

const INDEX_TYPES = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

const GOARCH: Partial<Record<NodeJS.Architecture, string>> = { x64: 'amd64', arm64: 'arm64', arm: 'arm' };

/** The chain ID of a layer stack (OCI image spec): the snapshotter names unpacked layers by it. */
export function chainId(diffIds: string[]): string {
  let chain = diffIds[0]!;
  for (const d of diffIds.slice(1)) chain = `sha256:${createHash('sha256').update(`${chain} ${d}`).digest('hex')}`;
  return chain;
}

/** How long a successful check of an image with the pool's credentials holds. */
export const RECHECK_AFTER_MS = 10 * 60_000;

/** The credentials as a key (a hash: the secret itself is not kept beside the image name). */
function credentialsKey(auth: RegistryAuth | undefined): string {
  if (!auth) return 'none';
  return createHash('sha256')
    .update(JSON.stringify([auth.username ?? '', auth.password ?? '', auth.auth ?? '']))
    .digest('hex');
}

const keyOf = (ref: string, auth: RegistryAuth | undefined) => `${ref}\u0000${credentialsKey(auth)}`;

export class ImageStore {
  private readonly resolved = new Map<string, Promise<ResolvedImage>>();
  /** `ref` + credentials key → when this agent last pulled or re-checked it (ms), or the check under way. */
  private readonly authorized = new Map<string, number | Promise<void>>();

  constructor(
    private readonly client: ContainerdClient,
    private readonly authFor: (ref: string) => RegistryAuth | undefined = () => undefined,
    private readonly recheckAfterMs = RECHECK_AFTER_MS,
  ) {}

  /**
   * The image, pulled if containerd does not have it, and re-checked with the registry when this
   * agent's credentials have not pulled it lately; concurrent creates of one image share one pull.
   */
  async ensure(ref: string): Promise<ResolvedImage> {
    const image = await this.resolveOnce(ref);
    const auth = this.authFor(ref);
    const key = keyOf(ref, auth);
    const at = this.authorized.get(key);
    if (typeof at === 'number' && Date.now() - at < this.recheckAfterMs) return image;
    let check = at instanceof Promise ? at : undefined;
    if (!check) {
      check = this.recheck(ref, auth, image.id).then(
        () => void this.authorized.set(key, Date.now()),
        (err: unknown) => {
          this.authorized.delete(key);
          throw err;
        },
      );
      this.authorized.set(key, check);
    }
    await check;
    // A tag that moved since: the check pulled the new image, resolved again.
    return this.resolveOnce(ref);
  }

  /** Pulls `ref` with the pool's credentials: only its manifest when present; refused as the tenant's error otherwise. */
  private async recheck(ref: string, auth: RegistryAuth | undefined, id: string): Promise<void> {
    let now: string;
    try {
      now = await this.client.pullImage(ref, auth);
    } catch (err) {
      throw new SandboxSpecError(
        `image ${JSON.stringify(ref)} is on this node, but this pool's image pull credentials cannot pull it ` +
          `(an image on the node runs only for credentials the registry accepts): ${(err as Error).message}`,
      );
    }
    if (now !== id) this.resolved.delete(ref);
  }

  private resolveOnce(ref: string): Promise<ResolvedImage> {
    let p = this.resolved.get(ref);
    if (!p) {
      p = this.resolve(ref);
      this.resolved.set(ref, p);
      p.catch(() => this.resolved.delete(ref)); // a failed pull is tried again by the next create
    }
    return p;
  }

  private async resolve(ref: string): Promise<ResolvedImage> {
    const status = await this.client.call('cri', 'imageStatus', {
      image: { image: ref },
    });
    let id = status.image?.id;
    const pulled = !id;
    if (!id) {
      try {
        const auth = this.authFor(ref);
        id = await this.client.pullImage(ref, auth);
        // Pulled with these credentials just now: checked.
        this.authorized.set(keyOf(ref, auth), Date.now());
      } catch (err) {
        throw new SandboxSpecError(`image ${JSON.stringify(ref)} cannot be pulled: ${(err as Error).message}`);
      }
    }
    const image = await this.client.getImage(id);
    const manifest = await this.manifestOf(image.target);
    const config = JSON.parse((await this.client.readContent(manifest.config.digest)).toString('utf8')) as {
      config?: ImageConfig;
      rootfs?: { diff_ids?: string[] };
    };
    const diffIds = config.rootfs?.diff_ids ?? [];
    if (diffIds.length === 0) throw new SandboxSpecError(`image ${JSON.stringify(ref)} has no layers`);
    const imageConfig = { ...config.config, User: await this.numericUser(config.config?.User, manifest.layers ?? []) };
    return { ref, id, config: imageConfig, chainId: chainId(diffIds), pulled };
  }

  /** The image's user as `uid:gid`: a name is looked up in the image's own passwd/group (root needs no look-up). */
  private async numericUser(user: string | undefined, layers: Descriptor[]): Promise<string> {
    const u = (user ?? '').trim();
    if (u === '' || /^\d+(:\d+)?$/.test(u)) return u;
    if (u === 'root' || u === 'root:root') return '0:0';
    const resolved = resolveNamedUser(u, await readUserFiles(this.client, layers));
    if ('error' in resolved) throw new SandboxSpecError(resolved.error);
    return `${resolved.uid}:${resolved.gid}`;
  }

  /** The image manifest; from an index, the one for this machine's platform. */
  private async manifestOf(target: Descriptor): Promise<{ config: Descriptor; layers?: Descriptor[] }> {
    const doc = JSON.parse((await this.client.readContent(target.digest)).toString('utf8')) as {
      manifests?: (Descriptor & { platform?: { os?: string; architecture?: string } })[];
      config: Descriptor;
      layers?: Descriptor[];
    };
    if (!INDEX_TYPES.has(target.mediaType) && !doc.manifests) return doc;
    const arch = GOARCH[process.arch] ?? process.arch;
    const m = doc.manifests?.find((d) => d.platform?.os === 'linux' && d.platform.architecture === arch);
    if (!m) throw new SandboxSpecError(`image has no manifest for linux/${arch}`);
    return this.manifestOf({ ...m, mediaType: m.mediaType ?? '' });
  }
}
