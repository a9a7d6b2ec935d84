/**
 * Resolves on SIGINT/SIGTERM. Keeps the event loop alive meanwhile: the stack's children are
 * detached and unref'd, and a signal listener alone does not keep Node running.
 */
export function untilShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    const done = (sig: NodeJS.Signals) => {
      clearInterval(keepAlive);
      resolve(sig);
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
