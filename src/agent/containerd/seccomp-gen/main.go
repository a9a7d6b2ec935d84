// Prints containerd's default seccomp profile (contrib/seccomp DefaultProfile) as data, for
// src/agent/containerd/seccomp.ts, and its default OCI spec (pkg/oci), for oci-spec.ts. Built
// for the host's GOARCH, as containerd itself is.
//
//	go run . parts CAP_A CAP_B …   the profile's pieces: the rules every container gets, one
//	                               list per capability, and the rules only a container without
//	                               CAP_SYS_ADMIN gets (what seccomp-default.json holds per GOARCH)
//	go run . profile CAP_A,CAP_B   DefaultProfile for that bounding set, whole (what tests compare)
//	go run . oci                   containerd's default OCI spec for a Linux container (./oci.go:
//	                               what oci-defaults.json holds)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/pkg/kernelversion"
	"github.com/opencontainers/runtime-spec/specs-go"
)

const sysAdmin = "CAP_SYS_ADMIN"

func profile(caps []string) *specs.LinuxSeccomp {
	return seccomp.DefaultProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}})
}

// Parts is one GOARCH's entry of seccomp-default.json. DefaultProfile(caps) is common, then
// byCapability[c] for each c of caps in order, then withoutSysAdmin unless caps hold CAP_SYS_ADMIN;
// the rules of common named in needsKernel4_8 only on kernel 4.8 or later.
type Parts struct {
	Containerd      string                          `json:"containerd"`
	DefaultAction   specs.LinuxSeccompAction        `json:"defaultAction"`
	Architectures   []specs.Arch                    `json:"architectures"`
	Common          []specs.LinuxSyscall            `json:"common"`
	NeedsKernel4_8  []int                           `json:"needsKernel4_8"`
	ByCapability    map[string][]specs.LinuxSyscall `json:"byCapability"`
	WithoutSysAdmin []specs.LinuxSyscall            `json:"withoutSysAdmin"`
}

func commonPrefix(a, b []specs.LinuxSyscall) int {
	n := 0
	for n < len(a) && n < len(b) && reflect.DeepEqual(a[n], b[n]) {
		n++
	}
	return n
}

func parts(caps []string) (*Parts, error) {
	if ok, err := kernelversion.GreaterEqualThan(kernelversion.KernelVersion{Kernel: 4, Major: 8}); err != nil || !ok {
		return nil, fmt.Errorf("generate on kernel 4.8 or later: the kernel-dependent rules are told apart by their absence before it")
	}
	none := profile(nil)
	admin := profile([]string{sysAdmin})
	n := commonPrefix(none.Syscalls, admin.Syscalls)
	p := &Parts{
		Containerd:      containerdVersion(),
		DefaultAction:   none.DefaultAction,
		Architectures:   none.Architectures,
		Common:          none.Syscalls[:n],
		NeedsKernel4_8:  []int{},
		ByCapability:    map[string][]specs.LinuxSyscall{},
		WithoutSysAdmin: none.Syscalls[n:],
	}
	// containerd's "include by kernel version": the rule that allows ptrace without CAP_SYS_PTRACE.
	for i, rule := range p.Common {
		if len(rule.Args) == 0 && rule.Action == specs.ActAllow && contains(rule.Names, "ptrace") {
			p.NeedsKernel4_8 = append(p.NeedsKernel4_8, i)
		}
	}
	for _, c := range caps {
		rules := profile([]string{c}).Syscalls
		if commonPrefix(rules, p.Common) != n {
			return nil, fmt.Errorf("%s changes the rules every container gets", c)
		}
		extra := rules[n:]
		if c != sysAdmin {
			tail := len(extra) - len(p.WithoutSysAdmin)
			if tail < 0 || !reflect.DeepEqual(extra[tail:], p.WithoutSysAdmin) {
				return nil, fmt.Errorf("%s does not end with the rules for a container without %s", c, sysAdmin)
			}
			extra = extra[:tail]
		}
		if len(extra) > 0 {
			p.ByCapability[c] = extra
		}
	}
	return p, nil
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func containerdVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/containerd/containerd/v2" {
				return dep.Path + " " + dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: parts CAP… | profile CAP,CAP… | oci")
		os.Exit(2)
	}
	var out any
	switch os.Args[1] {
	case "parts":
		p, err := parts(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out = map[string]*Parts{runtime.GOARCH: p}
	case "oci":
		d, err := ociDefaults()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out = d
	case "profile":
		caps := []string{}
		if len(os.Args) > 2 && os.Args[2] != "" {
			caps = strings.Split(os.Args[2], ",")
		}
		out = profile(caps)
	default:
		fmt.Fprintln(os.Stderr, "usage: parts CAP… | profile CAP,CAP… | oci")
		os.Exit(2)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
