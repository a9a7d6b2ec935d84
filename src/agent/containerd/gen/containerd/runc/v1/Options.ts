// Original file: containerd/runc/options/oci.proto


/**
 * The runc v2 shim's options (containerd runtime/v2/runc/options/oci.proto), sent as
 * Container.Runtime.options: binary_name runs runsc (gVisor) under the same shim.
 */
export interface Options {
  'noPivotRoot'?: (boolean);
  'noNewKeyring'?: (boolean);
  'shimCgroup'?: (string);
  'ioUid'?: (number);
  'ioGid'?: (number);
  'binaryName'?: (string);
  'root'?: (string);
  'criuPath'?: (string);
  'systemdCgroup'?: (boolean);
  'criuImagePath'?: (string);
  'criuWorkPath'?: (string);
}

/**
 * The runc v2 shim's options (containerd runtime/v2/runc/options/oci.proto), sent as
 * Container.Runtime.options: binary_name runs runsc (gVisor) under the same shim.
 */
export interface Options__Output {
  'noPivotRoot': (boolean);
  'noNewKeyring': (boolean);
  'shimCgroup': (string);
  'ioUid': (number);
  'ioGid': (number);
  'binaryName': (string);
  'root': (string);
  'criuPath': (string);
  'systemdCgroup': (boolean);
  'criuImagePath': (string);
  'criuWorkPath': (string);
}
