// sandbox-netd wires the agent's sandboxes into the network, so the agent execs no process per
// sandbox (before it, each life ran sh, ip, the CNI ptp and host-local plugins and nft: ≈ 70 ms of
// CPU). The agent starts it once, as a child in its own network namespace, and talks to it over
// stdin/stdout in JSON lines, one request per line, each answered by one line with the same id:
//
//	{"id":1,"op":"wire","netns":"fsb-…-c1","container":"c1","subnet":"198.18.3.0/24","ipamDir":"…/ipam/fsb_…","routeLocalnet":true}
//	  → {"id":1,"hostIf":"veth1a2b3c4d","ip":"198.18.3.2"}
//	{"id":2,"op":"unwire","netns":"fsb-…-c1","container":"c1","ipamDir":"…"} → {"id":2}
//	{"id":3,"op":"elements","table":"fsb_…","action":"add","ifnames":["veth…"],"ports":[{"port":8080,"ip":"198.18.3.2"}]} → {"id":3}
//
// or {"id":…,"error":"…"} saying which step failed and why. Requests run concurrently; the agent's
// end of stdin closing ends it once the requests in hand are answered.
//
// What a wire makes is what `ip netns add`, the CNI `ptp` plugin with `host-local` addresses made
// before it (so a sandbox, and an agent restarted across the change, see the same): wire.go.
// Static (CGO_ENABLED=0), pure Go: netlink (vishvananda/netlink) and nftables (google/nftables).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

type portForward struct {
	Port uint16 `json:"port"`
	IP   string `json:"ip"`
}

type request struct {
	ID            int64         `json:"id"`
	Op            string        `json:"op"`
	Netns         string        `json:"netns,omitempty"`
	Container     string        `json:"container,omitempty"`
	Subnet        string        `json:"subnet,omitempty"`
	IpamDir       string        `json:"ipamDir,omitempty"`
	RouteLocalnet bool          `json:"routeLocalnet,omitempty"`
	Table         string        `json:"table,omitempty"`
	Action        string        `json:"action,omitempty"`
	Ifnames       []string      `json:"ifnames,omitempty"`
	Ports         []portForward `json:"ports,omitempty"`
}

type response struct {
	ID     int64  `json:"id"`
	Error  string `json:"error,omitempty"`
	HostIf string `json:"hostIf,omitempty"`
	IP     string `json:"ip,omitempty"`
}

// hostNs is the agent's network namespace, opened before any thread leaves it: the namespace a
// new sandbox's veth peer goes to.
var hostNs int

func init() {
	// The main goroutine keeps the main thread: a thread that leaves for a sandbox's namespace
	// (wire.go) is never the main one, which the runtime cannot retire.
	runtime.LockOSThread()
}

func handle(req request) response {
	res := response{ID: req.ID}
	var err error
	switch req.Op {
	case "wire":
		res.HostIf, res.IP, err = wire(req)
	case "unwire":
		err = unwire(req)
	case "elements":
		err = elements(req)
	default:
		err = fmt.Errorf("unknown op %q (wire, unwire, elements)", req.Op)
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func main() {
	var err error
	hostNs, err = unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-netd: cannot open its own network namespace: %v\n", err)
		os.Exit(1)
	}
	in := bufio.NewReader(os.Stdin)
	var out sync.Mutex
	var inFlight sync.WaitGroup
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				write(&out, response{Error: fmt.Sprintf("not a request: %v", jerr)})
			} else {
				inFlight.Add(1)
				go func() {
					defer inFlight.Done()
					write(&out, handle(req))
				}()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox-netd: reading stdin: %v\n", err)
			break
		}
	}
	inFlight.Wait()
}

func write(mu *sync.Mutex, res response) {
	b, _ := json.Marshal(res)
	mu.Lock()
	defer mu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}
