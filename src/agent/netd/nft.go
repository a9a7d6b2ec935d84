package main

// A sandbox's elements in the agent's nftables table (src/domain/sandbox-network.ts makes the
// table, with `nft -f` once at the agent's start): its host-side interface in the set
// `sandbox_ifs`, its exposed ports in the map `ports` (port → its address).

import (
	"errors"
	"fmt"
	"net"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"golang.org/x/sys/unix"
)

func elements(req request) error {
	if req.Table == "" {
		return errors.New("elements needs a table")
	}
	table := &nftables.Table{Name: req.Table, Family: nftables.TableFamilyINet}
	ifs := &nftables.Set{Table: table, Name: "sandbox_ifs", KeyType: nftables.TypeIFName}
	ports := &nftables.Set{Table: table, Name: "ports", IsMap: true, KeyType: nftables.TypeInetService, DataType: nftables.TypeIPAddr}
	type change struct {
		set  *nftables.Set
		elem nftables.SetElement
		what string
	}
	var changes []change
	for _, name := range req.Ifnames {
		if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
			return fmt.Errorf("interface name %q is not 1 to %d characters", name, unix.IFNAMSIZ-1)
		}
		key := make([]byte, unix.IFNAMSIZ) // ifname: the name, NUL-padded to IFNAMSIZ, as nft stores it
		copy(key, name)
		changes = append(changes, change{ifs, nftables.SetElement{Key: key}, fmt.Sprintf("sandbox_ifs %q", name)})
	}
	for _, p := range req.Ports {
		e := nftables.SetElement{Key: binaryutil.BigEndian.PutUint16(p.Port)}
		if req.Action == "add" {
			ip := net.ParseIP(p.IP).To4()
			if ip == nil {
				return fmt.Errorf("port %d: %q is not an IPv4 address", p.Port, p.IP)
			}
			e.Val = ip
		}
		changes = append(changes, change{ports, e, fmt.Sprintf("ports %d", p.Port)})
	}
	switch req.Action {
	case "add":
		// One transaction: all of them or none.
		c, err := nftables.New()
		if err != nil {
			return err
		}
		for _, ch := range changes {
			if err := c.SetAddElements(ch.set, []nftables.SetElement{ch.elem}); err != nil {
				return fmt.Errorf("%s: %w", ch.what, err)
			}
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("adding to table inet %s: %w", req.Table, err)
		}
		return nil
	case "delete":
		// One at a time: one already gone must not keep the others.
		var errs []error
		for _, ch := range changes {
			c, err := nftables.New()
			if err == nil {
				err = c.SetDeleteElements(ch.set, []nftables.SetElement{ch.elem})
			}
			if err == nil {
				err = c.Flush()
			}
			if err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("deleting %s from table inet %s: %w", ch.what, req.Table, err))
			}
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("elements: action %q is not add or delete", req.Action)
	}
}
