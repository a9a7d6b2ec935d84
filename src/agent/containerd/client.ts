/**
 * A thin, typed client of containerd's native gRPC API on its unix socket (@grpc/grpc-js with
 * the .proto subset in src/api/proto/containerd), plus the CRI image service containerd serves
 * on the same socket for pulls. Every call carries the containerd namespace in the
 * `containerd-namespace` metadata key, as containerd's own clients do. Messages are plain
 * objects in proto-loader's shape (camelCase fields, enums as names, int64 as numbers).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** The directory holding `containerd/…` (next to the sources, or copied next to the compiled code). */
function protoRoot(): string {
  for (const c of ['../../api/proto', '../../../src/api/proto']) {
    const p = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(`${p}/containerd`)) return p;
  }
  throw new Error('containerd protos not found next to the code (src/api/proto/containerd)');
}

const FILES = [
  'containerd/services/containers/v1/containers.proto',
  'containerd/services/tasks/v1/tasks.proto',
  'containerd/services/snapshots/v1/snapshots.proto',
  'containerd/services/images/v1/images.proto',
  'containerd/services/content/v1/content.proto',
  'containerd/services/events/v1/events.proto',
  'containerd/cri/runtime/v1/api.proto',
];

/** `google.protobuf.Any`: protobufjs's wrapper for it keeps the proto field name `type_url` both ways. */
export interface Any {
  type_url: string;
  value: Buffer;
}
export interface Mount {
  type: string;
  source: string;
  target?: string;
  options: string[];
}
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}
export interface Container {
  id: string;
  labels: Record<string, string>;
  image: string;
  runtime?: { name: string; options?: Any | null } | null;
  spec?: Any | null;
  snapshotter: string;
  snapshotKey: string;
  /** Set by containerd (`google.protobuf.Timestamp`). */
  createdAt?: { seconds: number; nanos: number } | null;
}
export type TaskStatus = 'UNKNOWN' | 'CREATED' | 'RUNNING' | 'STOPPED' | 'PAUSED' | 'PAUSING';
export interface Process {
  containerId: string;
  id: string;
  pid: number;
  status: TaskStatus;
  stdin: string;
  stdout: string;
  stderr: string;
  exitStatus: number;
}
export interface Envelope {
  namespace: string;
  topic: string;
  event?: Any | null;
}

/** The OCI JSON payloads containerd keeps as `Any`s, by type URL (containerd's typeurl registry). */
export const OCI_TYPE_URL = {
  spec: 'types.containerd.io/opencontainers/runtime-spec/1/Spec',
  process: 'types.containerd.io/opencontainers/runtime-spec/1/Process',
  resources: 'types.containerd.io/opencontainers/runtime-spec/1/LinuxResources',
} as const;

export function jsonAny(typeUrl: string, value: unknown): Any {
  return { type_url: typeUrl, value: Buffer.from(JSON.stringify(value)) };
}

let messages: protobuf.Root | undefined;
/** The same files through protobufjs, to encode the runc options and decode event payloads (`Any`s). */
function messageRoot(): protobuf.Root {
  if (messages) return messages;
  const root = new protobuf.Root();
  const dir = protoRoot();
  root.resolvePath = (_origin, target) =>
    target.startsWith('/') || target.startsWith('google/') ? target : `${dir}/${target}`;
  return (messages = root.loadSync(
    ['containerd/runc/options/oci.proto', 'containerd/events/task.proto'].map((f) => `${dir}/${f}`),
  ));
}

/** The runc v2 shim's options as an `Any` (type `containerd.runc.v1.Options`). */
export function runcOptions(options: { binaryName?: string; root?: string }): Any {
  const type = messageRoot().lookupType('containerd.runc.v1.Options');
  const fields = { binaryName: options.binaryName ?? '', root: options.root ?? '' };
  return { type_url: 'containerd.runc.v1.Options', value: Buffer.from(type.encode(type.fromObject(fields)).finish()) };
}

/** Decodes an event's payload (`containerd.events.TaskExit`, `TaskOOM`) by its type URL. */
export function decodeEvent(any: Any): Record<string, unknown> | undefined {
  const name = any.type_url.replace(/^.*\//, '');
  const type = name.startsWith('containerd.events.') ? messageRoot().lookup(name) : null;
  if (!(type instanceof protobuf.Type)) return undefined; // an event this agent does not read
  return type.toObject(type.decode(any.value), { longs: Number }) as Record<string, unknown>;
}

/** containerd's "not found" (gRPC NOT_FOUND), e.g. an unknown container, task or image. */
export function isNotFound(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.NOT_FOUND;
}
export function isAlreadyExists(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.ALREADY_EXISTS;
}

type Callback = (err: grpc.ServiceError | null, res: unknown) => void;
type UnaryFn = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback) => grpc.ClientUnaryCall;
type StreamFn = (req: unknown, md: grpc.Metadata, opts?: grpc.CallOptions) => grpc.ClientReadableStream<unknown>;

/** Calls are bounded unless they wait by design (Wait, event streams). */
const CALL_TIMEOUT_MS = 30_000;

export class ContainerdClient {
  private readonly services: Record<string, grpc.Client> = {};
  private readonly md = new grpc.Metadata();

  constructor(
    readonly socket: string,
    readonly namespace: string,
  ) {
    const def = protoLoader.loadSync(FILES, {
      includeDirs: [protoRoot()],
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
      arrays: true,
      objects: false,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as Record<string, unknown>;
    const at = (path: string) => path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], pkg);
    // One channel for every service: they share the socket.
    const channel = new grpc.Channel(`unix://${socket}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    });
    for (const [name, path] of Object.entries({
      containers: 'containerd.services.containers.v1.Containers',
      tasks: 'containerd.services.tasks.v1.Tasks',
      snapshots: 'containerd.services.snapshots.v1.Snapshots',
      images: 'containerd.services.images.v1.Images',
      content: 'containerd.services.content.v1.Content',
      events: 'containerd.services.events.v1.Events',
      cri: 'runtime.v1.ImageService',
    })) {
      const Ctor = at(path) as grpc.ServiceClientConstructor;
      this.services[name] = new Ctor(`unix://${socket}`, grpc.credentials.createInsecure(), {
        channelOverride: channel,
      });
    }
    this.md.set('containerd-namespace', namespace);
  }

  /** One unary call; `signal` cancels it (waits), otherwise it is bounded by CALL_TIMEOUT_MS. */
  call<Res>(service: string, method: string, req: unknown, signal?: AbortSignal): Promise<Res> {
    const fn = (this.services[service] as unknown as Record<string, UnaryFn>)[method]!.bind(this.services[service]);
    return new Promise<Res>((resolve, reject) => {
      const opts: grpc.CallOptions = signal ? {} : { deadline: Date.now() + CALL_TIMEOUT_MS };
      const call = fn(req, this.md, opts, (err, res) => (err ? reject(err) : resolve(res as Res)));
      signal?.addEventListener('abort', () => call.cancel(), { once: true });
    });
  }

  stream<Msg>(service: string, method: string, req: unknown): grpc.ClientReadableStream<Msg> {
    const fn = (this.services[service] as unknown as Record<string, StreamFn>)[method]!.bind(this.services[service]);
    return fn(req, this.md) as grpc.ClientReadableStream<Msg>;
  }

  // ---- containers

  async createContainer(container: Omit<Container, 'labels'> & { labels: Record<string, string> }): Promise<void> {
    await this.call('containers', 'create', { container });
  }
  /** Replaces the named fields (`labels`, `spec`) of a container's record. */
  async updateContainer(container: Partial<Container> & { id: string }, paths: string[]): Promise<void> {
    await this.call('containers', 'update', { container, updateMask: { paths } });
  }
  async getContainer(id: string): Promise<Container> {
    return (await this.call<{ container: Container }>('containers', 'get', { id })).container;
  }
  async listContainers(filters: string[]): Promise<Container[]> {
    return (await this.call<{ containers: Container[] }>('containers', 'list', { filters })).containers;
  }
  async deleteContainer(id: string): Promise<void> {
    await this.call('containers', 'delete', { id });
  }

  // ---- snapshots

  async prepareSnapshot(snapshotter: string, key: string, parent: string): Promise<Mount[]> {
    return (await this.call<{ mounts: Mount[] }>('snapshots', 'prepare', { snapshotter, key, parent })).mounts;
  }
  async snapshotMounts(snapshotter: string, key: string): Promise<Mount[]> {
    return (await this.call<{ mounts: Mount[] }>('snapshots', 'mounts', { snapshotter, key })).mounts;
  }
  async removeSnapshot(snapshotter: string, key: string): Promise<void> {
    await this.call('snapshots', 'remove', { snapshotter, key });
  }

  // ---- tasks

  async createTask(req: {
    containerId: string;
    rootfs: Mount[];
    stdin?: string;
    stdout: string;
    stderr: string;
  }): Promise<number> {
    return (await this.call<{ pid: number }>('tasks', 'create', req)).pid;
  }
  async startTask(containerId: string, execId = ''): Promise<number> {
    return (await this.call<{ pid: number }>('tasks', 'start', { containerId, execId })).pid;
  }
  async getTask(containerId: string, execId = ''): Promise<Process> {
    return (await this.call<{ process: Process }>('tasks', 'get', { containerId, execId })).process;
  }
  /** Deletes the task (the container's processes must be gone); its exit status. */
  async deleteTask(containerId: string): Promise<number> {
    return (await this.call<{ exitStatus: number }>('tasks', 'delete', { containerId })).exitStatus;
  }
  async deleteProcess(containerId: string, execId: string): Promise<void> {
    await this.call('tasks', 'deleteProcess', { containerId, execId });
  }
  /** Signals the task's init (or exec), or with `all` every process of the container. */
  async kill(containerId: string, signal: number, opts: { execId?: string; all?: boolean } = {}): Promise<void> {
    await this.call('tasks', 'kill', { containerId, execId: opts.execId ?? '', signal, all: opts.all ?? false });
  }
  async exec(req: {
    containerId: string;
    execId: string;
    spec: Any;
    stdin?: string;
    stdout: string;
    stderr: string;
  }): Promise<void> {
    await this.call('tasks', 'exec', req);
  }
  /** Closes the shim's own write end of the process's stdin FIFO (it holds one): with ours closed too, the process reads EOF. */
  async closeStdin(containerId: string, execId = ''): Promise<void> {
    // grpc-js names methods as proto-loader camel-cases them: CloseIO → closeIo.
    await this.call('tasks', 'closeIo', { containerId, execId, stdin: true });
  }
  async updateTask(containerId: string, resources: unknown): Promise<void> {
    await this.call('tasks', 'update', { containerId, resources: jsonAny(OCI_TYPE_URL.resources, resources) });
  }
  /** Resolves with the exit status once the task (or exec) has exited; abort to stop waiting. */
  async wait(containerId: string, execId: string, signal: AbortSignal): Promise<number> {
    return (await this.call<{ exitStatus: number }>('tasks', 'wait', { containerId, execId }, signal)).exitStatus;
  }

  // ---- images and content

  async getImage(name: string): Promise<{ name: string; target: Descriptor; labels: Record<string, string> }> {
    return (
      await this.call<{ image: { name: string; target: Descriptor; labels: Record<string, string> } }>(
        'images',
        'get',
        { name },
      )
    ).image;
  }
  async listImages(filters: string[] = []): Promise<{ name: string }[]> {
    return (await this.call<{ images: { name: string }[] }>('images', 'list', { filters })).images;
  }
  /** A blob of the content store, whole (manifests and configs: small). */
  async readContent(digest: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const m of this.stream<{ data: Buffer }>('content', 'read', { digest, offset: 0, size: 0 }))
      parts.push(m.data);
    return Buffer.concat(parts);
  }

  /** Pulls and unpacks an image through containerd's CRI plugin; resolves with its image ID. */
  async pullImage(image: string, auth?: { username?: string; password?: string; auth?: string }): Promise<string> {
    return (await this.call<{ imageRef: string }>('cri', 'pullImage', { image: { image }, auth: auth ?? null }))
      .imageRef;
  }

  /** Event envelopes as they come (`filters` in containerd's filter syntax, e.g. `topic=="/tasks/oom"`). */
  subscribe(filters: string[]): grpc.ClientReadableStream<Envelope> {
    return this.stream<Envelope>('events', 'subscribe', { filters });
  }

  close(): void {
    for (const s of Object.values(this.services)) s.close();
  }
}
