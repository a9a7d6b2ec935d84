/**
 * sandbox-init's answer (src/agent/containerd/runtime.ts, answerThenLog): the first line of the
 * container's stdout. The process may write to stderr at once — a fork bomb's shell says "can't
 * fork" before the agent has read stdout — and the two FIFOs are read in no set order: the answer
 * is stdout's line all the same, and what stderr said comes in the log after it. Before, both
 * FIFOs fed one reader, so such a create was refused "sandbox-init answered \"sh: can't fork…\""
 * (seen under load in the fork-bomb test of sandbox-containerd).
 */
import { expect, it } from 'vitest';
import { answerThenLog } from '../../src/agent/containerd/runtime.js';
import { LogBuffer } from '../../src/agent/log-buffer.js';

it('stderr read before the answer neither answers nor is lost', async () => {
  const logs = new LogBuffer();
  const out = answerThenLog(logs);
  out.onStderr(Buffer.from("sh: can't fork: Resource temporarily unavailable\n"));
  out.onStdout(Buffer.from('{"ok":'));
  out.onStdout(Buffer.from('true}\nhello\n'));
  expect(await out.answer).toBe('{"ok":true}');
  expect(logs.snapshot().toString()).toBe("sh: can't fork: Resource temporarily unavailable\nhello\n");
  out.onStderr(Buffer.from('later\n'));
  expect(logs.snapshot().toString()).toContain('hello\nlater\n');
});
