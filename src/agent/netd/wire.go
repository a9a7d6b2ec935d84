package main

// A sandbox's network namespace, as `ip netns add` and the CNI ptp plugin made it:
//   - named: a file under /run/netns the namespace is bind-mounted on (runc and runsc join it by
//     path), /run/netns made a shared mount first so the node sees it from an agent Pod;
//   - inside, before any interface: IPv6 off (a sandbox gets no link-local address to reach the
//     agent's side with), any user may ping and bind any port (what containerd ≥ 2.0's CRI sets
//     for a Pod with a namespace of its own); loopback up (runc does that only for namespaces it
//     makes);
//   - a veth pair: eth0 inside with its address in the subnet (/len), a default route and the
//     subnet through the gateway, the gateway on-link; outside `veth<8 hex>` holding the gateway
//     as /32 and a host route to the sandbox's address. The agent's nftables table does the rest.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const netnsDir = "/run/netns"

// Serialises making /run/netns a shared mount point (two at once would stack two bind mounts).
var netnsDirMu sync.Mutex

// sharedNetnsDir makes /run/netns a shared mount, bind-mounting it on itself first when it is not
// a mount point, as iproute2 does on every `ip netns add`.
func sharedNetnsDir() error {
	netnsDirMu.Lock()
	defer netnsDirMu.Unlock()
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	made := false
	for {
		err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if err != unix.EINVAL || made {
			return fmt.Errorf("mount --make-shared %s: %w", netnsDir, err)
		}
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mount --bind %s %s: %w", netnsDir, netnsDir, err)
		}
		made = true
	}
}

// Sysctls of the sandbox's namespace, in order. IPv6's are absent when the kernel has no IPv6:
// nothing to turn off then.
var sandboxSysctls = []struct {
	path, value string
	absentOK    bool
}{
	{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", true},
	{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", true},
	{"/proc/sys/net/ipv4/ping_group_range", "0 2147483647", false},
	{"/proc/sys/net/ipv4/ip_unprivileged_port_start", "0", false},
}

func writeSysctl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func randomVethName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "veth" + hex.EncodeToString(b)
}

func wire(req request) (hostIf, ip string, err error) {
	if req.Netns == "" || req.Container == "" || req.IpamDir == "" {
		return "", "", errors.New("wire needs netns, container and ipamDir")
	}
	_, subnet, err := net.ParseCIDR(req.Subnet)
	if err != nil || subnet.IP.To4() == nil {
		return "", "", fmt.Errorf("subnet %q is not an IPv4 CIDR", req.Subnet)
	}
	// A crash between two steps of an earlier wire of this container left part of it: replaced.
	if err := unwire(req); err != nil {
		return "", "", fmt.Errorf("removing what an earlier wire left: %w", err)
	}
	addr, gw, err := allocate(req.IpamDir, req.Container, subnet)
	if err != nil {
		return "", "", err
	}
	defer func() {
		if err != nil {
			_ = unwire(req)
		}
	}()
	if err := sharedNetnsDir(); err != nil {
		return "", "", err
	}
	// A thread of its own enters the new namespace and dies with it (never unlocked): no other
	// goroutine ever runs there.
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		hostIf, err = inNewNetns(req.Netns, subnet, addr, gw)
		done <- err
	}()
	if err = <-done; err != nil {
		return "", "", err
	}
	// Back in the agent's namespace (this goroutine's thread never left it).
	if req.RouteLocalnet {
		// Loopback Pod IPs (the local stack's agents): DNAT'd connections from the node keep their
		// 127.x source until masqueraded, which the kernel routes out only with route_localnet.
		if err = writeSysctl(fmt.Sprintf("/proc/sys/net/ipv4/conf/%s/route_localnet", hostIf), "1"); err != nil {
			return "", "", fmt.Errorf("route_localnet on %s: %w", hostIf, err)
		}
	}
	// As the ptp plugin: the agent's namespace forwards the sandboxes' packets.
	if err = writeSysctl("/proc/sys/net/ipv4/ip_forward", "1"); err != nil {
		return "", "", fmt.Errorf("ip_forward: %w", err)
	}
	return hostIf, addr.String(), nil
}

// inNewNetns runs on a locked thread that it moves into the new namespace.
func inNewNetns(name string, subnet *net.IPNet, addr, gw net.IP) (string, error) {
	// The agent's side is configured through a socket made before the thread leaves it.
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return "", fmt.Errorf("netlink in the agent's namespace: %w", err)
	}
	defer host.Close()
	path := filepath.Join(netnsDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if err != nil {
		return "", fmt.Errorf("creating %s: %w", path, err)
	}
	f.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return "", fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
	}
	self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind-mounting the namespace on %s: %w", path, err)
	}
	for _, s := range sandboxSysctls {
		if err := writeSysctl(s.path, s.value); err != nil && !(s.absentOK && errors.Is(err, os.ErrNotExist)) {
			return "", fmt.Errorf("sysctl %s in the sandbox's namespace: %w", s.path, err)
		}
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return "", fmt.Errorf("netlink in the sandbox's namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return "", fmt.Errorf("loopback up: %w", err)
	}
	var hostIf string
	for attempt := 0; ; attempt++ {
		hostIf = randomVethName()
		err = h.LinkAdd(&netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: "eth0"},
			PeerName:      hostIf,
			PeerNamespace: netlink.NsFd(hostNs),
		})
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || attempt == 9 {
			return "", fmt.Errorf("veth pair eth0/%s: %w", hostIf, err)
		}
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return hostIf, fmt.Errorf("eth0: %w", err)
	}
	if err := h.LinkSetUp(eth0); err != nil {
		return hostIf, fmt.Errorf("eth0 up: %w", err)
	}
	hostLink, err := host.LinkByName(hostIf)
	if err == nil {
		err = host.LinkSetUp(hostLink)
	}
	if err != nil {
		return hostIf, fmt.Errorf("%s up: %w", hostIf, err)
	}
	// Inside, as ptp: the address with its prefix, then its prefix route replaced by a route to
	// the gateway alone (on-link) and the subnet through it, so every packet goes to the agent.
	full := &net.IPNet{IP: addr, Mask: subnet.Mask}
	if err := h.AddrAdd(eth0, &netlink.Addr{IPNet: full}); err != nil {
		return hostIf, fmt.Errorf("address %s on eth0: %w", full, err)
	}
	idx := eth0.Attrs().Index
	host32 := net.CIDRMask(32, 32)
	anywhere := &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: anywhere, Gw: gw}); err != nil {
		return hostIf, fmt.Errorf("default route via %s: %w", gw, err)
	}
	prefix := &net.IPNet{IP: addr.Mask(subnet.Mask), Mask: subnet.Mask}
	if err := h.RouteDel(&netlink.Route{LinkIndex: idx, Dst: prefix, Scope: netlink.SCOPE_NOWHERE}); err != nil {
		return hostIf, fmt.Errorf("deleting the route %s: %w", prefix, err)
	}
	for _, r := range []netlink.Route{
		{LinkIndex: idx, Dst: &net.IPNet{IP: gw, Mask: host32}, Scope: netlink.SCOPE_LINK, Src: addr},
		{LinkIndex: idx, Dst: prefix, Scope: netlink.SCOPE_UNIVERSE, Gw: gw, Src: addr},
	} {
		if err := h.RouteAdd(&r); err != nil {
			return hostIf, fmt.Errorf("route %s: %w", r.Dst, err)
		}
	}
	// Outside: the gateway's address, and the sandbox's address through its veth.
	if err := host.AddrAdd(hostLink, &netlink.Addr{IPNet: &net.IPNet{IP: gw, Mask: host32}}); err != nil {
		return hostIf, fmt.Errorf("address %s on %s: %w", gw, hostIf, err)
	}
	hostRoute := &netlink.Route{LinkIndex: hostLink.Attrs().Index, Scope: netlink.SCOPE_HOST, Dst: &net.IPNet{IP: addr, Mask: host32}}
	if err := host.RouteAdd(hostRoute); err != nil && !errors.Is(err, unix.EEXIST) {
		return hostIf, fmt.Errorf("route to %s via %s: %w", addr, hostIf, err)
	}
	return hostIf, nil
}

// unwire removes the sandbox's veth, namespace and address lease; what is already gone is fine.
func unwire(req request) error {
	if req.Netns == "" || req.Container == "" {
		return errors.New("unwire needs netns and container")
	}
	var errs []error
	if req.IpamDir != "" {
		errs = append(errs, release(req.IpamDir, req.Container))
	}
	path := filepath.Join(netnsDir, req.Netns)
	if _, err := os.Stat(path); err == nil {
		errs = append(errs, deleteEth0(path))
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", path, err))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// deleteEth0 removes the sandbox's end of the veth, and so both ends and their routes, at once
// (the namespace itself may outlive its unmount for a while in the kernel).
func deleteEth0(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // not a namespace (a crash between its file and its mount): nothing inside
	}
	defer unix.Close(fd)
	h, err := netlink.NewHandleAt(netns.NsHandle(fd), unix.NETLINK_ROUTE)
	if err != nil {
		return nil // likewise: the file is not a namespace
	}
	defer h.Close()
	link, err := h.LinkByName("eth0")
	if err != nil {
		return nil // gone already
	}
	if err := h.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("deleting eth0 in %s: %w", path, err)
	}
	return nil
}
