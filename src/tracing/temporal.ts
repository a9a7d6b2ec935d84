/**
 * Temporal's OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry), wired into the
 * project's clients and workers. The workflow interceptors are in every workflow bundle whether
 * tracing is on or not: the workflow code is then the same either way, so turning tracing on or
 * off never changes how a running workflow replays. They make spans only in a run started with a
 * trace context (./workflow-interceptors.ts); with tracing off clients and activities get no
 * interceptor at all, and the workflow sink drops what it is given.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { Context as ActivityContext } from '@temporalio/activity';
import type { ClientInterceptors } from '@temporalio/client';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import { activeTracing } from './tracing.js';

/** The workflow interceptor modules every bundle carries (bundleWorkflowCode's workflowInterceptorModules). */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [sibling('workflow-interceptors')];

/** A module beside this one: its .ts when running from sources, its .js when compiled. */
function sibling(name: string): string {
  const ts = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  return existsSync(ts) ? ts : fileURLToPath(new URL(`./${name}.js`, import.meta.url));
}

/** The client's interceptors: the trace context of the caller goes into each workflow call's headers. */
export function tracingClientInterceptors(): ClientInterceptors | undefined {
  if (!activeTracing()) return undefined;
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * A worker's options with tracing: spans around each activity (children of the workflow's
 * StartActivity span), the sink that exports the workflow's spans, and — when the worker
 * bundles its workflows at start — the workflow interceptors, as in the pre-built bundles.
 */
export function tracedWorkerOptions(options: WorkerOptions): WorkerOptions {
  const tracing = activeTracing();
  const exporter: InjectedSinks<OpenTelemetrySinks>['exporter'] = tracing
    ? makeWorkflowExporter(tracing.spanProcessor, tracing.resource)
    : { export: { fn: () => undefined } };
  return {
    ...options,
    sinks: { ...options.sinks, exporter },
    interceptors: {
      ...options.interceptors,
      // First, so the activity's span covers the other interceptors too.
      activity: [
        ...(tracing
          ? [
              (ctx: ActivityContext) => ({
                inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
                outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
              }),
            ]
          : []),
        ...(options.interceptors?.activity ?? []),
      ],
      ...(options.workflowsPath ? { workflowModules: WORKFLOW_INTERCEPTOR_MODULES } : {}),
    },
  };
}
