/** Ports the stack chooses for its servers (src/infra/process.ts). */
import net from 'node:net';
import { expect, it } from 'vitest';
import { ephemeralRangeStart, getFreePort } from '../../src/infra/process.js';

it('chooses free ports below the kernel’s ephemeral range, which outgoing connections take from', async () => {
  const low = ephemeralRangeStart();
  const ports = await Promise.all(Array.from({ length: 20 }, () => getFreePort()));
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(low);
  }
  // And bindable: the point of choosing it.
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(ports[0], '127.0.0.1', resolve));
  await new Promise((resolve) => srv.close(resolve));
});
