package main

// containerd's default OCI runtime spec for a Linux container (oci.GenerateSpec: its
// populateDefaultUnixSpec, then WithDefaultPathEnv), as data for src/agent/containerd/oci-spec.ts:
// what oci-defaults.json holds.

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
)

// OCIDefaults is oci-defaults.json.
type OCIDefaults struct {
	Containerd string `json:"containerd"`
	// The spec with what depends on the container (cgroupsPath: /<namespace>/<id>) and on the host
	// generating it (below) left out.
	Spec *oci.Spec `json:"spec"`
}

// containerd masks /sys/devices/system/cpu/cpuN/thermal_throttle of each possible CPU the host
// has it for: the generating host's, not a node's, so left out of the data.
var hostCPUPath = regexp.MustCompile(`^/sys/devices/system/cpu/cpu[0-9]+/`)

func ociDefaults() (*OCIDefaults, error) {
	ctx := namespaces.WithNamespace(context.Background(), "default")
	s, err := oci.GenerateSpecWithPlatform(ctx, nil, "linux", &containers.Container{ID: "id"}, oci.WithDefaultPathEnv)
	if err != nil {
		return nil, fmt.Errorf("oci.GenerateSpec: %w", err)
	}
	if s.Linux == nil || s.Process == nil {
		return nil, fmt.Errorf("oci.GenerateSpec gave no linux or process section")
	}
	s.Linux.CgroupsPath = ""
	s.Linux.MaskedPaths = slices.DeleteFunc(s.Linux.MaskedPaths, hostCPUPath.MatchString)
	return &OCIDefaults{Containerd: containerdVersion(), Spec: s}, nil
}
