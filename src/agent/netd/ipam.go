package main

// Addresses of the agent's sandbox subnet, kept on disk as the CNI host-local plugin keeps them (a
// file per address, named by it, holding "<container ID>\r\n<interface>", and last_reserved_ip.0),
// so an agent restarted, or upgraded from the CNI plugins, finds its leases (the agent reads them:
// a lease whose container is gone is released at its start). Handed out in turn after the last
// one, never the gateway (the subnet's first address, the agent's side of every veth).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	leaseIfname = "eth0"
	lastFile    = "last_reserved_ip.0"
)

var ipam = struct {
	sync.Mutex
	// By directory: container ID → its addresses (read from disk on first use).
	dirs map[string]map[string][]string
}{dirs: map[string]map[string][]string{}}

func u32(ip net.IP) uint32 { return binary.BigEndian.Uint32(ip.To4()) }

func ipOf(n uint32) net.IP {
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, n)
	return ip
}

// leasesIn is the directory's index, read on first use. The caller holds ipam's lock.
func leasesIn(dir string) (map[string][]string, error) {
	if l, ok := ipam.dirs[dir]; ok {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("address leases: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("address leases: %w", err)
	}
	l := map[string][]string{}
	for _, e := range entries {
		if ip := net.ParseIP(e.Name()); ip == nil || ip.To4() == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		id := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		l[id] = append(l[id], e.Name())
	}
	ipam.dirs[dir] = l
	return l, nil
}

// allocate leases the next free address of subnet to container; it returns it and the gateway.
func allocate(dir, container string, subnet *net.IPNet) (ip, gw net.IP, err error) {
	ipam.Lock()
	defer ipam.Unlock()
	l, err := leasesIn(dir)
	if err != nil {
		return nil, nil, err
	}
	ones, bits := subnet.Mask.Size()
	if bits != 32 || ones > 29 {
		return nil, nil, fmt.Errorf("subnet %s is not an IPv4 subnet of at least 8 addresses", subnet)
	}
	network := u32(subnet.IP)
	first, last := network+1, network|^u32(net.IP(subnet.Mask))-1
	gateway := first
	start := first
	if b, err := os.ReadFile(filepath.Join(dir, lastFile)); err == nil {
		if prev := net.ParseIP(strings.TrimSpace(string(b))); prev != nil && prev.To4() != nil {
			if p := u32(prev); p >= first && p < last {
				start = p + 1
			}
		}
	}
	for i, n := uint32(0), start; i <= last-first; i, n = i+1, n+1 {
		if n > last {
			n = first
		}
		if n == gateway {
			continue
		}
		name := ipOf(n).String()
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("leasing %s: %w", name, err)
		}
		_, werr := f.WriteString(container + "\r\n" + leaseIfname)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(filepath.Join(dir, name))
			return nil, nil, fmt.Errorf("leasing %s: %w", name, werr)
		}
		l[container] = append(l[container], name)
		// Where the next search starts: a released address is not handed out again at once.
		_ = os.WriteFile(filepath.Join(dir, lastFile), []byte(name), 0o644)
		return ipOf(n), ipOf(gateway), nil
	}
	return nil, nil, fmt.Errorf("no free address in %s: every one is leased (%s)", subnet, dir)
}

// release removes the container's leases; none is fine.
func release(dir, container string) error {
	ipam.Lock()
	defer ipam.Unlock()
	l, err := leasesIn(dir)
	if err != nil {
		return err
	}
	for _, name := range l[container] {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("releasing %s: %w", name, err)
		}
	}
	delete(l, container)
	return nil
}
