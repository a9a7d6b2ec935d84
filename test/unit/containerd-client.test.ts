import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { decodeEvent, jsonAny, runcOptions } from '../../src/agent/containerd/client.js';

// The runc shim reads these bytes: a field name protobufjs does not know is dropped silently.
describe('what the agent sends containerd inside Anys', () => {
  const options = new protobuf.Type('Options')
    .add(new protobuf.Field('binary_name', 6, 'string'))
    .add(new protobuf.Field('root', 7, 'string'));

  it('the runc options carry binary_name (field 6) and root (field 7)', () => {
    const any = runcOptions({ binaryName: '/usr/bin/runsc', root: '/run/x' });
    expect(any.type_url).toBe('containerd.runc.v1.Options');
    expect(options.toObject(options.decode(any.value))).toEqual({ binary_name: '/usr/bin/runsc', root: '/run/x' });
  });

  it('OCI payloads are JSON under their containerd type URL', () => {
    const any = jsonAny('types.containerd.io/opencontainers/runtime-spec/1/Spec', { ociVersion: '1.0.2' });
    expect(JSON.parse(any.value.toString())).toEqual({ ociVersion: '1.0.2' });
  });

  it('a TaskOOM event decodes to its container ID', () => {
    const oom = new protobuf.Type('TaskOOM').add(new protobuf.Field('container_id', 1, 'string'));
    const value = Buffer.from(oom.encode(oom.fromObject({ container_id: 'sb-1' })).finish());
    expect(decodeEvent({ type_url: 'containerd.events.TaskOOM', value })).toEqual({ containerId: 'sb-1' });
    expect(decodeEvent({ type_url: 'containerd.events.ContainerCreate', value })).toBeUndefined();
  });
});
