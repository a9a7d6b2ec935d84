#!/usr/bin/env node
/**
 * The one CLI. Roles: `dev` (everything, locally), `worker`, `watcher`, `admission`, `fastpath`, `agent`; tools: `infra`, `image`.
 * Commander parses flags; each command only wires config into the role's start function.
 */
import path from 'node:path';
import { Command, Option, type OptionValues } from '@commander-js/extra-typings';
import { loadConfig, type OperatorConfig } from '../config.js';
import { DEFAULT_SANDBOX_SUBNET } from '../domain/sandbox-network.js';
import { ensureAllBinaries, ensureBinary, findBinary } from '../infra/binaries.js';
import { INSTALL_HINT, findHostTools, installMissingHostTools } from '../infra/host-tools.js';
import { LocalStack } from '../infra/stack.js';
import { INFRA_BINARIES, INFRA_VERSIONS, NODE_BINARIES, TOOL_BINARIES } from '../infra/versions.js';
import { logger } from '../log.js';
import { registerCheckpointCommands } from './checkpoint.js';
import { registerCodecServerCommand } from './codec-server.js';
import { runDev } from './dev.js';
import { count, goDurationMs, portNumber } from './options.js';
import { untilShutdownSignal } from './signals.js';
import { registerSandboxCommands } from './sandbox.js';
import { registerTenantCommands } from './tenants.js';

const program = new Command()
  .name('durable-operators')
  .description('Kubernetes operators whose every operation is a durable Temporal workflow.')
  .showHelpAfterError();

function connectionOptions<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(
  cmd: Command<Args, Opts, Globals>,
) {
  return cmd
    .addOption(new Option('--temporal-address <host:port>', 'Temporal frontend').env('TEMPORAL_ADDRESS'))
    .addOption(new Option('--namespace <ns>', 'Temporal namespace').env('TEMPORAL_NAMESPACE'))
    .addOption(
      new Option('--temporal-profile <name>', 'profile of the Temporal config file (as `temporal --profile`)').env(
        'TEMPORAL_PROFILE',
      ),
    )
    .addOption(
      new Option(
        '--temporal-config-file <path>',
        'Temporal config file (TOML, as the temporal CLI; default ~/.config/temporalio/temporal.toml)',
      ).env('TEMPORAL_CONFIG_FILE'),
    )
    .addOption(new Option('--task-queue <name>', 'task queue shared by watcher and worker').env('DO_TASK_QUEUE'))
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)'));
}

/** The connection flags (and `--metrics-port`) as parsed; their env vars were commander's fallback. */
function configFrom(flags: {
  temporalAddress?: string;
  namespace?: string;
  temporalProfile?: string;
  temporalConfigFile?: string;
  taskQueue?: string;
  kubeconfig?: string;
  metricsPort?: number;
}): OperatorConfig {
  return loadConfig(flags);
}

/**
 * OpenTelemetry tracing for a role that runs a Temporal client or worker, when the OTEL_*
 * variables ask for it (src/tracing): before any client connects, so every one carries it.
 */
async function tracingOf(role: string) {
  const { startTracing } = await import('../tracing/tracing.js');
  return startTracing(role, logger.child({ role }));
}

connectionOptions(program.command('worker').description('Run the Temporal worker (all workflows and activities).'))
  .addOption(
    new Option('--metrics-port <port>', "serve /healthz and /readyz (0 = any free port; its metrics are the SDK's)")
      .env('DO_METRICS_PORT')
      .argParser(portNumber),
  )
  .action(async (flags) => {
    const { createWorker } = await import('../workers/worker.js');
    const cfg = configFrom(flags);
    const tracing = await tracingOf('worker');
    const worker = await createWorker(cfg);
    const { ensureRequestTtlSweep } = await import('../workers/schedules.js');
    const { connectClient } = await import('../temporal/connection.js');
    const client = await connectClient(cfg.temporal);
    const scheduleId = await ensureRequestTtlSweep(client, cfg);
    await client.connection.close();
    logger.info(
      { taskQueue: cfg.temporal.taskQueue, address: cfg.temporal.address, ttlSweep: scheduleId },
      'worker running',
    );
    // The Temporal runtime shuts the worker down gracefully on SIGINT/SIGTERM.
    await worker.run();
    await tracing?.shutdown();
    logger.info('worker stopped');
  });

connectionOptions(program.command('watcher').description('Watch Kubernetes and start/signal workflows.'))
  .addOption(
    new Option('--metrics-port <port>', 'serve /metrics and /healthz (0 = any free port)')
      .env('DO_METRICS_PORT')
      .argParser(portNumber)
      .default(9464),
  )
  .action(async (flags) => {
    const { startWatcher } = await import('../watcher/main.js');
    const cfg = configFrom(flags);
    const tracing = await tracingOf('watcher');
    const running = await startWatcher(cfg);
    logger.info({ taskQueue: cfg.temporal.taskQueue, metricsPort: running.metricsPort }, 'watcher running');
    await untilShutdownSignal();
    await running.stop();
    await tracing?.shutdown();
    logger.info('watcher stopped');
  });

program
  .command('admission')
  .description('Serve the validating admission webhook: a capture request may only name objects its creator may read.')
  .addOption(new Option('--port <port>', 'HTTPS port').env('DO_ADMISSION_PORT').argParser(portNumber).default(9443))
  .addOption(new Option('--host <address>', 'address to listen on').env('DO_ADMISSION_HOST').default('0.0.0.0'))
  .addOption(
    new Option('--tls-cert-file <path>', 'serving certificate (PEM; re-read when it changes)')
      .env('DO_ADMISSION_TLS_CERT')
      .default('/etc/durable-operators/admission-tls/tls.crt'),
  )
  .addOption(
    new Option('--tls-key-file <path>', 'its private key (PEM)')
      .env('DO_ADMISSION_TLS_KEY')
      .default('/etc/durable-operators/admission-tls/tls.key'),
  )
  .addOption(
    new Option(
      '--sandbox-capabilities <json>',
      'capabilities SandboxPools may add beyond the default set, per namespace: {"NET_RAW": ["team-a"], "SYS_PTRACE": ["*"]}',
    ).env('DO_ADMISSION_SANDBOX_CAPABILITIES'),
  )
  .addOption(new Option('--kubeconfig <path>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)'))
  .addOption(
    new Option('--metrics-port <port>', 'serve /metrics, /healthz and /readyz over plain HTTP (0 = any free port)')
      .env('DO_METRICS_PORT')
      .argParser(portNumber),
  )
  .action(async (flags) => {
    const { startAdmissionServer } = await import('../admission/server.js');
    const { KubeClient } = await import('../kube/client.js');
    const { parseAllowedCapabilities } = await import('../domain/sandbox-capabilities.js');
    const allowedCapabilities = parseAllowedCapabilities(flags.sandboxCapabilities);
    if (Object.keys(allowedCapabilities).length)
      logger.info({ allowedCapabilities }, 'admission: sandbox capabilities allowed beyond the default set');
    const running = await startAdmissionServer({
      allowedCapabilities,
      // Not loadConfig(): the webhook never talks to Temporal, so its settings cannot stop it.
      kube: KubeClient.fromKubeconfig(flags.kubeconfig ?? (process.env.KUBECONFIG || undefined)),
      port: flags.port,
      host: flags.host,
      certFile: flags.tlsCertFile,
      keyFile: flags.tlsKeyFile,
      ...(flags.metricsPort !== undefined ? { metricsPort: flags.metricsPort } : {}),
    });
    await untilShutdownSignal();
    await running.close();
    logger.info('admission webhook stopped');
  });

const devCommand = program
  .command('dev')
  .description(
    'Start the real local stack (etcd, kube-apiserver, controller-manager, Temporal + UI) plus worker, watcher, the sandbox fast path with a pool of agents, and the Cloudflare API emulator.',
  )
  .option('--state-dir <dir>', 'where state, logs and the kubeconfig live', process.env.DO_STATE_DIR ?? '.state/dev')
  .option('--no-worker', 'do not start the worker')
  .option('--no-watcher', 'do not start the watcher')
  .option('--no-fastpath', 'do not start the sandbox fast path and its default pool of agents')
  .option('--no-cloudflare', 'do not start the Cloudflare API emulator')
  .option(
    '--in-cluster',
    'the roles as Pods of a real node in the stack, installed by helm from the image built here (root; state in .state/dev-cluster)',
  )
  .action(async (flags) => {
    const inCluster = flags.inCluster === true;
    await runDev({
      inCluster,
      // Its own state unless one is named: a node's apiserver serves on another address, and its
      // agents are Pods the kubelet runs rather than dev's processes.
      stateDir: path.resolve(
        inCluster && devCommand.getOptionValueSource('stateDir') === 'default' ? '.state/dev-cluster' : flags.stateDir,
      ),
      worker: flags.worker,
      watcher: flags.watcher,
      fastpath: flags.fastpath,
      cloudflare: flags.cloudflare,
    });
  });

program
  .command('agent')
  .description(
    'Run a sandbox agent, behind a bearer token: sandboxes are containerd containers (runc, or gVisor for ' +
      'RUNTIME_TYPE=gvisor); --runtime process runs them as plain processes, which isolates nothing.',
  )
  .addOption(
    new Option('--runtime <name>', 'containerd, or process (no isolation: trusted code only)')
      .choices(['containerd', 'process'])
      .env('DO_AGENT_RUNTIME')
      .default('containerd'),
  )
  .addOption(
    new Option(
      '--allow-unisolated',
      'let --runtime process serve runtimeType container: sandboxes are NOT ISOLATED (development only)',
    ),
  )
  .addOption(
    new Option('--runtime-type <type>', "the pool's runtimeType: container (runc) or gvisor (runsc)")
      .env('RUNTIME_TYPE')
      .default('container'),
  )
  .addOption(
    new Option('--containerd-socket <path>', "the node's containerd socket")
      .env('CONTAINERD_SOCKET')
      .default('/run/containerd/containerd.sock'),
  )
  .addOption(
    new Option('--containerd-namespace <ns>', 'containerd namespace').env('CONTAINERD_NAMESPACE').default('k8s.io'),
  )
  .addOption(new Option('--runsc-binary <path>', 'runsc (or a wrapper with its flags), for gvisor').env('RUNSC_BINARY'))
  .addOption(
    new Option('--runtime-root <path>', "the OCI runtime's state directory (runc --root)").env('DO_AGENT_RUNTIME_ROOT'),
  )
  .addOption(
    new Option(
      '--sandbox-subnet <cidr>',
      "the sandboxes' IPv4 subnet inside the agent's network namespace (each sandbox has a namespace of its own)",
    )
      .env('SANDBOX_SUBNET')
      .default(DEFAULT_SANDBOX_SUBNET),
  )
  .addOption(
    new Option(
      '--egress <json>',
      "the pool's egress policy: {policy: internet|none, allow: [{cidr, ports}], dnsServers}",
    ).env('SANDBOX_EGRESS'),
  )
  .addOption(
    new Option(
      '--egress-deny <cidrs>',
      "never reached by sandboxes besides the non-public ranges: the cluster's Pod and Service ranges",
    ).env('SANDBOX_EGRESS_DENY'),
  )
  .addOption(
    new Option(
      '--netd-binary <path>',
      "sandbox-netd, which wires the sandboxes' network namespaces (default: built from this checkout)",
    ).env('DO_SANDBOX_NETD'),
  )
  .addOption(
    new Option('--network-tag <tag>', 'names what the agent adds to the node (namespaces, nftables table)').env(
      'DO_AGENT_NETWORK_TAG',
    ),
  )
  .addOption(
    new Option('--io-dir <path>', "sandboxes' stdio FIFOs: a directory at the same path on the node and in the agent")
      .env('DO_AGENT_IO_DIR')
      .default('/run/fast-sandbox'),
  )
  .addOption(
    new Option('--warm-images <list>', "image=count,…: warm containers to keep ready (the pool's warmImages)").env(
      'SANDBOX_WARM_IMAGES',
    ),
  )
  .addOption(
    new Option('--init-binary <path>', 'sandbox-init, PID 1 of every sandbox container (containerd runtime)').env(
      'DO_SANDBOX_INIT',
    ),
  )
  .addOption(
    new Option('--pull-secrets-dir <dir>', "the pool's image pull Secrets (docker config JSON), for pulls").env(
      'SANDBOX_PULL_SECRETS_DIR',
    ),
  )
  .addOption(
    new Option('--default-cpu <quantity>', 'CPU limit of sandboxes that set none (containerd; default 1)').env(
      'SANDBOX_DEFAULT_CPU',
    ),
  )
  .addOption(
    new Option(
      '--default-memory <quantity>',
      'memory limit of sandboxes that set none (containerd; default 512Mi)',
    ).env('SANDBOX_DEFAULT_MEMORY'),
  )
  .addOption(
    new Option(
      '--default-ephemeral-storage <quantity>',
      "most a sandbox's writable layer may take before the agent kills it (containerd; default 10Gi)",
    ).env('SANDBOX_DEFAULT_EPHEMERAL_STORAGE'),
  )
  .addOption(
    new Option(
      '--cgroup-parent <path>',
      "parent of the sandboxes' cgroups, a cgroupfs path (default /fast-sandbox)",
    ).env('DO_AGENT_CGROUP_PARENT'),
  )
  .addOption(
    new Option('--default-pids <n>', 'most processes per sandbox (default 1024)')
      .env('SANDBOX_DEFAULT_PIDS')
      .argParser(count),
  )
  .addOption(
    new Option(
      '--capabilities-add <list>',
      "capabilities added to the sandboxes' default set, e.g. NET_RAW,SYS_PTRACE (the pool's sandboxSecurityContext)",
    ).env('SANDBOX_CAPABILITIES_ADD'),
  )
  .addOption(
    new Option('--capabilities-drop <list>', 'capabilities removed from the default set first (ALL: every one)').env(
      'SANDBOX_CAPABILITIES_DROP',
    ),
  )
  .addOption(new Option('--port <port>', 'HTTP port').env('DO_AGENT_PORT').argParser(portNumber).default(5758))
  .addOption(new Option('--host <address>', 'address to listen on').env('DO_AGENT_HOST').default('0.0.0.0'))
  .addOption(new Option('--agent-id <id>', 'agent ID reported in status (the Pod name)').env('POD_NAME'))
  .addOption(new Option('--node-name <name>', 'node name reported in status').env('NODE_NAME').default(''))
  .addOption(
    new Option('--capacity <n>', 'sandboxes this agent holds at most')
      .env('AGENT_CAPACITY')
      .argParser(count)
      .default(5),
  )
  .addOption(
    new Option('--kill-grace <ms>', 'time between SIGTERM and SIGKILL when deleting a sandbox')
      .env('DO_AGENT_KILL_GRACE_MS')
      .argParser(count)
      .default(10_000),
  )
  .addOption(
    new Option('--token-file <path>', 'file holding the bearer token (the mounted Secret)').env('DO_AGENT_TOKEN_FILE'),
  )
  .addOption(
    new Option('--tls-cert-file <path>', "the agent's certificate (pool Secret)").env('DO_AGENT_TLS_CERT_FILE'),
  )
  .addOption(new Option('--tls-key-file <path>', "the certificate's private key").env('DO_AGENT_TLS_KEY_FILE'))
  .addOption(new Option('--tls-ca-file <path>', "the fast path's client CA (pool Secret)").env('DO_AGENT_TLS_CA_FILE'))
  .addOption(
    new Option(
      '--insecure-plain-http',
      'serve plain HTTP without TLS: the token travels in clear (tests and local runs only; the fast path never calls such an agent)',
    ),
  )
  .action(async (flags) => {
    const { startAgentServer } = await import('../agent/server.js');
    const { loadAgentToken } = await import('../agent/auth.js');
    const os = await import('node:os');
    const path = await import('node:path');
    const capacity = flags.capacity;
    const agentId = flags.agentId ?? os.hostname();
    const tlsFiles = [flags.tlsCertFile, flags.tlsKeyFile, flags.tlsCaFile];
    // Checked before the runtime starts: an agent without its TLS files does not come up at all.
    if (tlsFiles.some(Boolean) && !tlsFiles.every(Boolean))
      throw new Error('--tls-cert-file, --tls-key-file and --tls-ca-file go together');
    if (!tlsFiles.every(Boolean) && !flags.insecurePlainHttp)
      throw new Error(
        'the agent serves HTTPS only: set --tls-cert-file, --tls-key-file and --tls-ca-file (DO_AGENT_TLS_*_FILE), or --insecure-plain-http for a local test agent',
      );
    const host = !flags.host || flags.host === '0.0.0.0' ? (process.env.POD_IP ?? '0.0.0.0') : flags.host;
    const { parseCapabilityList } = await import('../domain/sandbox-capabilities.js');
    const capabilities = {
      add: parseCapabilityList(flags.capabilitiesAdd),
      drop: parseCapabilityList(flags.capabilitiesDrop),
    };
    let chosen: { runtime: import('../agent/runtime.js').SandboxRuntime; label: string };
    if (flags.runtime === 'process') {
      // Limits the pool asks for are never dropped (review N6): no agent rather than unlimited sandboxes.
      const limits = Object.entries({
        '--default-cpu (SANDBOX_DEFAULT_CPU)': flags.defaultCpu,
        '--default-memory (SANDBOX_DEFAULT_MEMORY)': flags.defaultMemory,
        '--default-pids (SANDBOX_DEFAULT_PIDS)': flags.defaultPids,
        '--default-ephemeral-storage (SANDBOX_DEFAULT_EPHEMERAL_STORAGE)': flags.defaultEphemeralStorage,
      }).filter(([, v]) => v);
      if (limits.length)
        throw new Error(
          `the process runtime cannot enforce ${limits.map(([k]) => k).join(', ')} (the pool's sandboxResources): ` +
            'not starting rather than running sandboxes without them; use --runtime containerd',
        );
      const { ProcessRuntime } = await import('../agent/process-runtime.js');
      const runtime = new ProcessRuntime({
        host,
        runtimeType: flags.runtimeType,
        allowUnisolated: flags.allowUnisolated,
        capabilities,
      });
      if (flags.allowUnisolated && !runtime.unsupported)
        logger.warn(
          { runtimeType: flags.runtimeType },
          'process runtime with --allow-unisolated: sandboxes are NOT ISOLATED (they run as this agent, with its files and network)',
        );
      chosen = { runtime, label: 'process' };
    } else {
      const { containerdRuntime } = await import('../agent/containerd/setup.js');
      chosen = await containerdRuntime({
        socket: flags.containerdSocket,
        namespace: flags.containerdNamespace,
        runtimeType: flags.runtimeType,
        runscBinary: flags.runscBinary,
        runtimeRoot: flags.runtimeRoot,
        subnet: flags.sandboxSubnet,
        egress: flags.egress,
        egressDeny: flags.egressDeny,
        hostIp: process.env.HOST_IP,
        netdBinary: flags.netdBinary ?? (await (await import('../infra/go-programs.js')).buildSandboxNetd()),
        networkTag: flags.networkTag,
        ioDir: path.join(flags.ioDir, agentId),
        agentName: agentId,
        agentUid: process.env.POD_UID,
        agentNamespace: process.env.POD_NAMESPACE,
        host,
        defaults: { cpu: flags.defaultCpu, memory: flags.defaultMemory, pids: flags.defaultPids },
        ephemeralStorage: flags.defaultEphemeralStorage,
        warm: flags.warmImages,
        initBinary: flags.initBinary,
        pullSecretsDir: flags.pullSecretsDir,
        capabilities,
        cgroupParent: flags.cgroupParent,
      });
    }
    const running = await startAgentServer({
      runtime: chosen.runtime,
      runtimeLabel: chosen.label,
      token: loadAgentToken({ tokenFile: flags.tokenFile, token: process.env.DO_AGENT_TOKEN }),
      ...(flags.tokenFile && { tokenFile: flags.tokenFile }),
      ...(tlsFiles.every(Boolean)
        ? {
            tls: {
              certFile: flags.tlsCertFile!,
              keyFile: flags.tlsKeyFile!,
              caFile: flags.tlsCaFile!,
              // How often the mounted files are re-read (a renewed certificate); 10 s by default.
              ...(process.env.DO_AGENT_TLS_RELOAD_MS && {
                reloadIntervalMs: Number(process.env.DO_AGENT_TLS_RELOAD_MS),
              }),
            },
          }
        : { insecurePlainHttp: true }),
      port: flags.port,
      host: flags.host,
      agentId,
      nodeName: flags.nodeName,
      capacity,
      killGraceMs: flags.killGrace,
    });
    // Last resort if the agent dies another way: no sandbox outlives it.
    process.once('exit', () => running.runtime.killAllNow());
    await untilShutdownSignal();
    await running.close();
  });

connectionOptions(
  program
    .command('fastpath')
    .description(
      'Serve the sandbox fast path (gRPC fastpath.v1 + HTTP/JSON) with its agent registry and the sandbox worker.',
    ),
)
  .addOption(
    new Option('--grpc-port <port>', 'gRPC port').env('DO_FASTPATH_GRPC_PORT').argParser(portNumber).default(9090),
  )
  .addOption(
    new Option('--http-port <port>', 'HTTP/JSON port').env('DO_FASTPATH_HTTP_PORT').argParser(portNumber).default(9080),
  )
  .addOption(new Option('--host <address>', 'address to listen on').env('DO_FASTPATH_HOST').default('0.0.0.0'))
  .addOption(
    new Option('--fastpath-consistency-mode <mode>', 'default mode of creates that do not ask for STRONG')
      .choices(['fast', 'strong'])
      .env('DO_FASTPATH_CONSISTENCY_MODE')
      .default('fast'),
  )
  .addOption(
    new Option('--fastpath-orphan-timeout <duration>', 'age after which an unrecorded sandbox is removed')
      .env('DO_FASTPATH_ORPHAN_TIMEOUT')
      .argParser(goDurationMs)
      .default(10_000, '10s'),
  )
  .addOption(
    new Option('--janitor-interval <duration>', 'how often the janitor Schedule runs')
      .env('DO_FASTPATH_JANITOR_INTERVAL')
      .argParser(goDurationMs)
      .default(10_000, '10s'),
  )
  .addOption(
    new Option(
      '--fastpath-scale-up-timeout <duration>',
      'how long a Strong create waits for an agent of a pool scaling up from zero',
    )
      .env('DO_FASTPATH_SCALE_UP_TIMEOUT')
      .argParser(goDurationMs)
      .default(60_000, '60s'),
  )
  .addOption(
    new Option('--agent-token-file <path>', "the agents' bearer token (mounted Secret)").env('DO_AGENT_TOKEN_FILE'),
  )
  .addOption(new Option('--tenant-etcd <endpoints>', 'tenant configuration etcd').env('DO_TENANT_ETCD'))
  .addOption(
    new Option('--metrics-port <port>', 'serve /metrics and /healthz (0 = any free port)')
      .env('DO_METRICS_PORT')
      .argParser(portNumber)
      .default(9091),
  )
  .action(async (flags) => {
    const { startFastPath } = await import('../fastpath/main.js');
    const { loadFastPathConfig } = await import('../config.js');
    const cfg = configFrom(flags);
    // The flags as parsed; what has no flag (TLS, tenant prefix, namespace…) comes from the environment.
    const fp = loadFastPathConfig(process.env, {
      grpcPort: flags.grpcPort,
      httpPort: flags.httpPort,
      host: flags.host,
      consistencyMode: flags.fastpathConsistencyMode,
      orphanTimeoutMs: flags.fastpathOrphanTimeout,
      janitorIntervalMs: flags.janitorInterval,
      scaleUpTimeoutMs: flags.fastpathScaleUpTimeout,
      agentTokenFile: flags.agentTokenFile,
      tenantEtcd: flags.tenantEtcd,
    });
    const tracing = await tracingOf('fastpath');
    // Listening before the start: a SIGTERM during start-up still ends in a clean stop.
    const shutdown = untilShutdownSignal();
    const running = await startFastPath(cfg, fp);
    logger.info({ grpcPort: running.grpcPort, httpPort: running.httpPort }, 'fastpath running');
    await shutdown;
    await running.close();
    // After the worker's drain: the last workflow and activity spans are in the processor.
    await tracing?.shutdown();
    logger.info('fastpath stopped');
  });

registerTenantCommands(program);
registerCodecServerCommand(program);
registerCheckpointCommands(program);
registerSandboxCommands(program);

const infra = program.command('infra').description('Infrastructure binaries and the local stack.');
infra
  .command('provision')
  .description(
    'Find or build Temporal CLI, etcd, kube-apiserver, kube-controller-manager, helm, promtool, kustomize, and the node binaries kubelet, kube-proxy and CoreDNS (cached by version), sandbox-init and the pause image; as root, apt-get install the containerd tools if missing.',
  )
  .option(
    '--without-node',
    "leave the node's binaries and the pause image out (the stack with a node builds them when it first starts)",
  )
  .action(async (flags) => {
    const bins = [...Object.values(await ensureAllBinaries())];
    for (const extra of [...TOOL_BINARIES, ...(flags.withoutNode ? [] : NODE_BINARIES)])
      bins.push(await ensureBinary(extra));
    for (const b of bins) console.log(`${b.name.padEnd(24)} ${b.version ?? '?'}\t${b.source}\t${b.path}`);
    const installed = await installMissingHostTools((l) => process.stderr.write(`[infra] ${l}\n`));
    if (installed.length) console.log(`installed with apt-get: ${installed.join(' ')}`);
    const { tools, missing } = findHostTools();
    for (const [name, file] of Object.entries(tools)) if (file) console.log(`${name.padEnd(24)} host\t${file}`);
    for (const name of missing) console.log(`${name.padEnd(24)} missing (${INSTALL_HINT})`);
    const { ensureSandboxInit, ensureSandboxNetd } = await import('../infra/go-programs.js');
    console.log(`${'sandbox-init'.padEnd(24)} built\t${await ensureSandboxInit()}`);
    console.log(`${'sandbox-netd'.padEnd(24)} built\t${await ensureSandboxNetd()}`);
    if (flags.withoutNode) return;
    const { ensurePauseImage } = await import('../infra/pause-image.js');
    const pause = await ensurePauseImage();
    console.log(`${'pause image'.padEnd(24)} ${pause.reference}\t${pause.archive}`);
  });
infra
  .command('status')
  .description('Show pinned versions and where each binary would come from, without building anything.')
  .action(() => {
    console.log(`pinned: ${JSON.stringify(INFRA_VERSIONS)}`);
    for (const b of [...INFRA_BINARIES, ...TOOL_BINARIES, ...NODE_BINARIES]) {
      const attempts: string[] = [];
      const found = findBinary(b, attempts);
      console.log(
        found ? `${b.padEnd(24)} ${found.source}\t${found.path}` : `${b.padEnd(24)} missing (${attempts.join('; ')})`,
      );
    }
  });
infra
  .command('start')
  .description('Run only the local stack in the foreground (Ctrl-C stops it).')
  .option('--state-dir <dir>', 'state directory', '.state/infra')
  .addOption(
    new Option('--mode <mode>', 'dev keeps state and serves the UI; test is in-memory')
      .choices(['dev', 'test'])
      .default('dev'),
  )
  .option('--node', 'with a real node: kubelet, kube-proxy, kube-scheduler, CoreDNS (root, the host tools)')
  .action(async (flags) => {
    const stack = await LocalStack.start({ stateDir: flags.stateDir, mode: flags.mode, node: flags.node === true });
    console.log(JSON.stringify(stack.info, null, 2));
    await untilShutdownSignal();
    await stack.stop();
  });

program
  .command('image')
  .description("The project's image (as the Dockerfile builds it), built here without Docker.")
  .command('build')
  .description(
    'Build the image with mmdebstrap, the pinned Node, Go and umoci (as root; cached by its inputs); print its layout, tag and digest.',
  )
  .option('--push <host:port>', 'then push it to this registry (plain HTTP) and print its reference')
  .action(async (flags) => {
    const { buildProjectImage, pushProjectImage } = await import('../infra/project-image.js');
    const { requireHostTools } = await import('../infra/host-tools.js');
    const tools = requireHostTools();
    const image = await buildProjectImage({ log: (l) => process.stderr.write(`[image] ${l}\n`), umoci: tools.umoci });
    console.log(`layout\t${image.layout}\ntag\t${image.tag}\ndigest\t${image.digest}\ncached\t${!image.built}`);
    if (flags.push) console.log(`pushed\t${await pushProjectImage(image, flags.push, tools.skopeo)}`);
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
