/**
 * The lifeline's watchdog (see lifeline.ts): waits for its stdin to close — its owner ended, or
 * stopped the stack — then reaps the ledger named on its command line and exits.
 */
import { reapLedger } from './lifeline.js';

const ledgerFile = process.argv[2];
if (!ledgerFile) throw new Error('usage: lifeline-watchdog <ledger file>');
process.stdin.resume();
process.stdin.once('close', () => {
  void reapLedger(ledgerFile).then(
    (killed) => {
      if (killed.length) console.log(`${new Date().toISOString()} owner gone: killed ${killed.join(', ')}`);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
