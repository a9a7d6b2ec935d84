/**
 * What `dev` says about its sandboxes' isolation: never unisolated without saying why and the
 * command that fixes it.
 */
import { describe, expect, it } from 'vitest';
import { sandboxIsolation } from '../../src/infra/stack.js';

const host = { disabled: false, linux: true, root: true, missing: [] as string[], runsc: true };

describe('sandboxIsolation', () => {
  it('runs containerd, with nothing to say, as root with every tool', () => {
    expect(sandboxIsolation(host)).toEqual({ containerd: true });
  });

  it('says a non-root dev must run as root', () => {
    const { containerd, message } = sandboxIsolation({ ...host, root: false });
    expect(containerd).toBe(false);
    expect(message).toMatch(/^containerd isolation off: not root — run `sudo npm run dev`/);
    expect(message).not.toMatch(/infra/);
  });

  it('names what a non-root dev also lacks, and both commands in order', () => {
    const { containerd, message } = sandboxIsolation({ ...host, root: false, missing: ['umoci', 'nft'] });
    expect(containerd).toBe(false);
    expect(message).toMatch(
      /not root, and missing umoci, nft — run `sudo npm run infra` once, then `sudo npm run dev`/,
    );
  });

  it('names the missing tools as root, and the step that installs them', () => {
    const { containerd, message } = sandboxIsolation({ ...host, missing: ['containerd', 'skopeo'] });
    expect(containerd).toBe(false);
    expect(message).toMatch(/^containerd isolation off: missing containerd, skopeo — run `sudo npm run infra`/);
  });

  it('says containerd runs without gVisor when only runsc is missing', () => {
    const { containerd, message } = sandboxIsolation({ ...host, runsc: false });
    expect(containerd).toBe(true);
    expect(message).toMatch(/gVisor off: runsc missing .*`sudo npm run infra`/);
  });

  it('says it was turned off on purpose, and off Linux that it cannot be had', () => {
    expect(sandboxIsolation({ ...host, disabled: true })).toEqual({
      containerd: false,
      message: expect.stringMatching(/^containerd isolation off: DO_CONTAINERD=0/),
    });
    expect(sandboxIsolation({ ...host, linux: false, root: false })).toEqual({
      containerd: false,
      message: expect.stringMatching(/^containerd isolation off: not Linux/),
    });
  });
});
