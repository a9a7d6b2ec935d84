/**
 * Resolves on the first SIGINT/SIGTERM and keeps absorbing later ones, so the shutdown that
 * follows is not cut short: Ctrl-C reaches every process of the foreground group, and wrappers
 * such as tsx relay it again. Also keeps the event loop alive until then: the stack's children
 * are detached and unref'd, and a signal listener alone does not keep Node running.
 */
export function untilShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    let received = false;
    const onSignal = (sig: NodeJS.Signals) => {
      if (received) {
        process.stderr.write(`(${sig} again: already shutting down)\n`);
        return;
      }
      received = true;
      clearInterval(keepAlive);
      resolve(sig);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
