/**
 * A thin, typed client of containerd's native gRPC API on its unix socket (@grpc/grpc-js with
 * the .proto subset in src/api/proto/containerd), plus the CRI image service containerd serves
 * on the same socket for pulls. Every call carries the containerd namespace in the
 * `containerd-namespace` metadata key, as containerd's own clients do. Messages are plain
 * objects in proto-loader's shape (camelCase fields, enums as names, int64 as numbers), typed by
 * ./gen: proto-loader's own generator run with CONTAINERD_LOADER_OPTIONS (`npm run protos`).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import type { ContainersClient } from './gen/containerd/services/containers/v1/Containers.js';
import type {
  Container as ContainerInput,
  Container__Output,
} from './gen/containerd/services/containers/v1/Container.js';
import type { ContentClient } from './gen/containerd/services/content/v1/Content.js';
import type { Envelope__Output } from './gen/containerd/services/events/v1/Envelope.js';
import type { EventsClient } from './gen/containerd/services/events/v1/Events.js';
import type { Image__Output } from './gen/containerd/services/images/v1/Image.js';
import type { ImagesClient } from './gen/containerd/services/images/v1/Images.js';
import type { SnapshotsClient } from './gen/containerd/services/snapshots/v1/Snapshots.js';
import type { TasksClient } from './gen/containerd/services/tasks/v1/Tasks.js';
import type { TaskExit__Output } from './gen/containerd/events/TaskExit.js';
import type { TaskOOM__Output } from './gen/containerd/events/TaskOOM.js';
import type { Options as RuncOptions } from './gen/containerd/runc/v1/Options.js';
import type { Descriptor__Output } from './gen/containerd/types/Descriptor.js';
import type { Mount__Output } from './gen/containerd/types/Mount.js';
import type { Process__Output } from './gen/containerd/v1/types/Process.js';
import type { Status__Output } from './gen/containerd/v1/types/Status.js';
import type { Any__Output } from './gen/google/protobuf/Any.js';
import type { ProtoGrpcType as CriProto } from './gen/api.js';
import type { ProtoGrpcType as ContainersProto } from './gen/containers.js';
import type { ProtoGrpcType as ContentProto } from './gen/content.js';
import type { ProtoGrpcType as EventsProto } from './gen/events.js';
import type { ProtoGrpcType as ImagesProto } from './gen/images.js';
import type { ProtoGrpcType as SnapshotsProto } from './gen/snapshots.js';
import type { ProtoGrpcType as TasksProto } from './gen/tasks.js';
import type { ImageServiceClient } from './gen/runtime/v1/ImageService.js';

/** The directory holding `containerd/…` (next to the sources, or copied next to the compiled code). */
function protoRoot(): string {
  for (const c of ['../../api/proto', '../../../src/api/proto']) {
    const p = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(`${p}/containerd`)) return p;
  }
  throw new Error('containerd protos not found next to the code (src/api/proto/containerd)');
}

/** The containerd and CRI services this client calls (their messages come with them). */
export const CONTAINERD_PROTO_FILES = [
  'containerd/services/containers/v1/containers.proto',
  'containerd/services/tasks/v1/tasks.proto',
  'containerd/services/snapshots/v1/snapshots.proto',
  'containerd/services/images/v1/images.proto',
  'containerd/services/content/v1/content.proto',
  'containerd/services/events/v1/events.proto',
  'containerd/cri/runtime/v1/api.proto',
];

/** How messages look in JS: the generated types in ./gen (`npm run protos`) are rendered with these. */
export const CONTAINERD_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: false,
};

/** Messages as containerd's answers arrive (proto-loader's `__Output` shapes, generated in ./gen). */
export type Any = Any__Output;
export type Mount = Mount__Output;
export type Descriptor = Descriptor__Output;
export type Container = Container__Output;
export type Image = Image__Output;
export type TaskStatus = Status__Output;
export type Process = Process__Output;
export type Envelope = Envelope__Output;
/** An event payload this agent reads (`TaskExit`, `TaskOOM`): fields absent when empty (decoded without defaults). */
export type TaskEvent = Partial<TaskExit__Output & TaskOOM__Output>;

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
export function runcOptions(options: Pick<RuncOptions, 'binaryName' | 'root'>): Any {
  const type = messageRoot().lookupType('containerd.runc.v1.Options');
  const fields = { binaryName: options.binaryName ?? '', root: options.root ?? '' };
  return { type_url: 'containerd.runc.v1.Options', value: Buffer.from(type.encode(type.fromObject(fields)).finish()) };
}

/** Decodes an event's payload (`containerd.events.TaskExit`, `TaskOOM`) by its type URL. */
export function decodeEvent(any: Any): TaskEvent | undefined {
  const name = any.type_url.replace(/^.*\//, '');
  const type = name.startsWith('containerd.events.') ? messageRoot().lookup(name) : null;
  if (!(type instanceof protobuf.Type)) return undefined; // an event this agent does not read
  return type.toObject(type.decode(any.value), { longs: Number }) as TaskEvent;
}

/** containerd's "not found" (gRPC NOT_FOUND), e.g. an unknown container, task or image. */
export function isNotFound(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.NOT_FOUND;
}
export function isAlreadyExists(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.ALREADY_EXISTS;
}

/** The services of the socket, by the short name calls use. */
interface Services {
  containers: ContainersClient;
  tasks: TasksClient;
  snapshots: SnapshotsClient;
  images: ImagesClient;
  content: ContentClient;
  events: EventsClient;
  cri: ImageServiceClient;
}
/** A generated client's RPC methods (camelCase, as proto-loader names them too), not grpc.Client's own. */
type Methods<C> = Exclude<keyof C, keyof grpc.Client>;
// Read from the last overload the generator writes: `(request, callback)` for a unary method,
// `(request, options?)` for a server-streaming one.
type Unary<F> = F extends (req: infer Req, cb: grpc.requestCallback<infer Res>) => grpc.ClientUnaryCall
  ? { req: Req; res: Res }
  : never;
type ServerStream<F> = F extends (req: infer Req, opts?: grpc.CallOptions) => grpc.ClientReadableStream<infer Msg>
  ? { req: Req; msg: Msg }
  : never;

type Callback = (err: grpc.ServiceError | null, res: unknown) => void;
type UnaryFn = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback) => grpc.ClientUnaryCall;
type StreamFn = (req: unknown, md: grpc.Metadata, opts?: grpc.CallOptions) => grpc.ClientReadableStream<unknown>;

/** Calls are bounded unless they wait by design (Wait, event streams). */
const CALL_TIMEOUT_MS = 30_000;

export class ContainerdClient {
  private readonly services: Services;
  private readonly md = new grpc.Metadata();

  constructor(
    readonly socket: string,
    readonly namespace: string,
  ) {
    const def = protoLoader.loadSync(CONTAINERD_PROTO_FILES, {
      ...CONTAINERD_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as ContainersProto &
      TasksProto &
      SnapshotsProto &
      ImagesProto &
      ContentProto &
      EventsProto &
      CriProto;
    const address = `unix://${socket}`;
    const credentials = grpc.credentials.createInsecure();
    // One channel for every service: they share the socket.
    const options = {
      channelOverride: new grpc.Channel(address, credentials, { 'grpc.max_receive_message_length': 64 * 1024 * 1024 }),
    };
    const v1 = pkg.containerd.services;
    this.services = {
      containers: new v1.containers.v1.Containers(address, credentials, options),
      tasks: new v1.tasks.v1.Tasks(address, credentials, options),
      snapshots: new v1.snapshots.v1.Snapshots(address, credentials, options),
      images: new v1.images.v1.Images(address, credentials, options),
      content: new v1.content.v1.Content(address, credentials, options),
      events: new v1.events.v1.Events(address, credentials, options),
      cri: new pkg.runtime.v1.ImageService(address, credentials, options),
    };
    this.md.set('containerd-namespace', namespace);
  }

  /** One unary call; `signal` cancels it (waits), otherwise it is bounded by CALL_TIMEOUT_MS. */
  call<S extends keyof Services, M extends Methods<Services[S]>>(
    service: S,
    method: M,
    req: Unary<Services[S][M]>['req'],
    signal?: AbortSignal,
  ): Promise<Unary<Services[S][M]>['res']> {
    const client = this.services[service];
    const fn = (client as unknown as Record<PropertyKey, UnaryFn>)[method]!.bind(client);
    return new Promise((resolve, reject) => {
      const opts: grpc.CallOptions = signal ? {} : { deadline: Date.now() + CALL_TIMEOUT_MS };
      const call = fn(req, this.md, opts, (err, res) =>
        err ? reject(err) : resolve(res as Unary<Services[S][M]>['res']),
      );
      signal?.addEventListener('abort', () => call.cancel(), { once: true });
    });
  }

  stream<S extends keyof Services, M extends Methods<Services[S]>>(
    service: S,
    method: M,
    req: ServerStream<Services[S][M]>['req'],
  ): grpc.ClientReadableStream<ServerStream<Services[S][M]>['msg']> {
    const client = this.services[service];
    const fn = (client as unknown as Record<PropertyKey, StreamFn>)[method]!.bind(client);
    return fn(req, this.md) as grpc.ClientReadableStream<ServerStream<Services[S][M]>['msg']>;
  }

  // ---- containers

  async createContainer(container: ContainerInput & { id: string }): Promise<void> {
    await this.call('containers', 'create', { container });
  }
  /** Replaces the named fields (`labels`, `spec`) of a container's record. */
  async updateContainer(container: ContainerInput & { id: string }, paths: string[]): Promise<void> {
    await this.call('containers', 'update', { container, updateMask: { paths } });
  }
  async getContainer(id: string): Promise<Container> {
    return present((await this.call('containers', 'get', { id })).container, `container ${id}`);
  }
  async listContainers(filters: string[]): Promise<Container[]> {
    return (await this.call('containers', 'list', { filters })).containers;
  }
  async deleteContainer(id: string): Promise<void> {
    await this.call('containers', 'delete', { id });
  }

  // ---- snapshots

  async prepareSnapshot(snapshotter: string, key: string, parent: string): Promise<Mount[]> {
    return (await this.call('snapshots', 'prepare', { snapshotter, key, parent })).mounts;
  }
  async snapshotMounts(snapshotter: string, key: string): Promise<Mount[]> {
    return (await this.call('snapshots', 'mounts', { snapshotter, key })).mounts;
  }
  async removeSnapshot(snapshotter: string, key: string): Promise<void> {
    await this.call('snapshots', 'remove', { snapshotter, key });
  }
  /** What an active snapshot's writable layer takes on disk (containerd walks its upper directory). */
  async snapshotUsage(snapshotter: string, key: string): Promise<{ size: number; inodes: number }> {
    const u = await this.call('snapshots', 'usage', { snapshotter, key });
    return { size: Number(u.size), inodes: Number(u.inodes) };
  }

  // ---- tasks

  async createTask(req: {
    containerId: string;
    rootfs: Mount[];
    stdin?: string;
    stdout: string;
    stderr: string;
  }): Promise<number> {
    return (await this.call('tasks', 'create', req)).pid;
  }
  async startTask(containerId: string, execId = ''): Promise<number> {
    return (await this.call('tasks', 'start', { containerId, execId })).pid;
  }
  async getTask(containerId: string, execId = ''): Promise<Process> {
    return present((await this.call('tasks', 'get', { containerId, execId })).process, `task ${containerId}`);
  }
  /** Deletes the task (the container's processes must be gone); its exit status. */
  async deleteTask(containerId: string): Promise<number> {
    return (await this.call('tasks', 'delete', { containerId })).exitStatus;
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
    return (await this.call('tasks', 'wait', { containerId, execId }, signal)).exitStatus;
  }

  // ---- images and content

  async getImage(name: string): Promise<Image & { target: Descriptor }> {
    const image = present((await this.call('images', 'get', { name })).image, `image ${name}`);
    return { ...image, target: present(image.target, `the target of image ${name}`) };
  }
  async listImages(filters: string[] = []): Promise<Image[]> {
    return (await this.call('images', 'list', { filters })).images;
  }
  /** A blob of the content store, whole (manifests and configs: small). */
  async readContent(digest: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const m of this.stream('content', 'read', { digest, offset: 0, size: 0 })) parts.push(m.data);
    return Buffer.concat(parts);
  }

  /** Pulls and unpacks an image through containerd's CRI plugin; resolves with its image ID. */
  async pullImage(image: string, auth?: { username?: string; password?: string; auth?: string }): Promise<string> {
    return (await this.call('cri', 'pullImage', { image: { image }, auth: auth ?? null })).imageRef;
  }

  /** Event envelopes as they come (`filters` in containerd's filter syntax, e.g. `topic=="/tasks/oom"`). */
  subscribe(filters: string[]): grpc.ClientReadableStream<Envelope> {
    return this.stream('events', 'subscribe', { filters });
  }

  close(): void {
    for (const s of Object.values(this.services)) s.close();
  }
}

/** A message field containerd always sets on success (proto-loader gives an unset one as null). */
function present<T>(value: T | null, what: string): T {
  if (value === null) throw new Error(`containerd answered without ${what}`);
  return value;
}
