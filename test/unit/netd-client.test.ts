/**
 * The agent's end of sandbox-netd (src/agent/network/netd.ts): answers matched by id, a helper
 * that dies fails what was asked of it with why and is started again by the next request, one
 * that cannot run says so. Stand-in helpers are shell scripts (the real one's protocol, JSON lines).
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Netd } from '../../src/agent/network/netd.js';

const dir = mkdtempSync(path.join(tmpdir(), 'netd-client-'));
const opened: Netd[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((n) => n.close()));
});

function helper(name: string, script: string): Netd {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${script}`);
  chmodSync(file, 0o755);
  const n = new Netd(file);
  opened.push(n);
  return n;
}

const unwire = { op: 'unwire', netns: 'ns', container: 'c', ipamDir: '/x' } as const;

it('answers each request by its id, out of order too, and a wire with its interface and address', async () => {
  // Reads two requests, answers the second first.
  const n = helper(
    'swap',
    `read a; read b
ida=$(echo "$a" | sed 's/.*"id":\\([0-9]*\\).*/\\1/'); idb=$(echo "$b" | sed 's/.*"id":\\([0-9]*\\).*/\\1/')
echo "{\\"id\\":$idb,\\"error\\":\\"no such table\\"}"
echo "{\\"id\\":$ida,\\"hostIf\\":\\"veth01\\",\\"ip\\":\\"198.18.0.2\\"}"
cat >/dev/null
`,
  );
  const wire = n.request({ op: 'wire', netns: 'ns', container: 'c', subnet: '198.18.0.0/24', ipamDir: '/x' });
  const elements = n.request({ op: 'elements', table: 't', action: 'add', ifnames: ['veth01'], ports: [] });
  await expect(elements).rejects.toThrow('no such table');
  await expect(wire).resolves.toEqual({ hostIf: 'veth01', ip: '198.18.0.2' });
});

it('a helper that dies fails what it had with why, and the next request starts it again', async () => {
  const starts = path.join(dir, 'starts');
  writeFileSync(starts, '');
  const n = helper('dies', `echo started >>'${starts}'\nread line\necho 'netlink: permission denied' >&2\nexit 3\n`);
  await expect(n.request(unwire)).rejects.toThrow(
    /sandbox-netd \(.*dies\) exited \(code 3\): netlink: permission denied/,
  );
  await expect(n.request(unwire)).rejects.toThrow(/exited \(code 3\)/);
  expect(readFileSync(starts, 'utf8')).toBe('started\nstarted\n');
});

it('a helper that cannot run says so at the request', async () => {
  const n = new Netd(path.join(dir, 'no-such-helper'));
  await expect(n.request(unwire)).rejects.toThrow(/sandbox-netd \(.*no-such-helper\) cannot run: spawn .* ENOENT/);
});
