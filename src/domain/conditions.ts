/**
 * metav1.Condition helpers. Pure: the caller passes `now`, so workflows (deterministic time)
 * and activities use the same code.
 */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/**
 * Returns the list with `next` set; `lastTransitionTime` only moves when the status changes,
 * as Kubernetes API conventions require.
 */
export function setCondition(
  existing: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>,
  now: Date,
): Condition[] {
  const list = [...(existing ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const lastTransitionTime = prev && prev.status === next.status ? prev.lastTransitionTime : now.toISOString();
  const merged: Condition = { ...next, lastTransitionTime };
  if (i >= 0) list[i] = merged;
  else list.push(merged);
  return list;
}
