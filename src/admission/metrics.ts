/**
 * The admission webhook's metrics (prom-client), on its metrics port (DO_METRICS_PORT): every
 * AdmissionReview answered, by kind and verdict, and how long the answer took. The apiserver's
 * own `apiserver_admission_webhook_*` metrics see the calls from the other side.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createAdmissionMetrics(registry = new Registry()) {
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    reviews: new Counter({
      name: 'durable_operators_admission_reviews_total',
      help: 'AdmissionReviews answered, by kind, allowed (true/false) and code (200 allowed, 403 refused, 500 the check failed: refused, fail closed; 400 malformed).',
      labelNames: ['kind', 'allowed', 'code'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'durable_operators_admission_review_duration_seconds',
      help: 'Time to answer an AdmissionReview (its SubjectAccessReviews and reads included), by kind.',
      labelNames: ['kind'] as const,
      // The apiserver gives up after the webhook's timeoutSeconds (15 s, deploy/webhook).
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    }),
  };
}

export type AdmissionMetrics = ReturnType<typeof createAdmissionMetrics>;
