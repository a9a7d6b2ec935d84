// sandbox-init is PID 1 of every sandbox container, cold or warm, under runc or gVisor (the tini /
// `docker --init` model). It starts the sandbox's process as its child, reaps every process that
// ends up its child (orphans of the sandbox and of `exec`, which re-parent to PID 1: without a
// reaper they stay zombies and hold the pids limit for ever), forwards the signals it gets to the
// child, and exits with the child's status (its code, or 128+n when a signal n ended it — what
// containerd reports for a process it ran itself), so the container ends when the sandbox's
// process does; the PID namespace takes whatever is left.
//
// The process, in one of two ways:
//   - cold: `sandbox-init -- ARGS…`, with the container's env, working directory and user;
//   - warm (no args): the container is created and started ahead of time and waits here; the
//     agent writes one JSON line on stdin — the sandbox's args, env and working directory.
//
// Either way sandbox-init answers one JSON line on stdout before the process starts ({"ok":true},
// or {"error":"..."} when the command cannot run, and exits 127); the agent strips it from the
// sandbox's log. The process runs with everything the container was made with: namespaces, cgroup
// limits, capabilities, seccomp, user.
//
// Static (CGO_ENABLED=0), standard library only, so it runs in any image; it is bind-mounted
// read-only into the container.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

type start struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

// What is forwarded to the child: what tini forwards, less what the kernel raises for a fault of
// sandbox-init itself, terminal job control it has no terminal for, SIGCHLD (reaped here), SIGPIPE
// (its own write to a closed stdout), and SIGURG/SIGPROF (the Go runtime's own).
var forwarded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTSTP, syscall.SIGALRM, syscall.SIGVTALRM, syscall.SIGXCPU,
	syscall.SIGXFSZ, syscall.SIGIO, syscall.SIGPWR,
}

func answer(v map[string]any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func fail(msg string) {
	answer(map[string]any{"error": msg})
	os.Exit(127)
}

// readStart waits for the warm container's sandbox on stdin.
func readStart() start {
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err != nil {
		// The agent closed stdin without a sandbox: the warm container is being removed.
		os.Exit(0)
	}
	var s start
	if err := json.Unmarshal(line, &s); err != nil || len(s.Args) == 0 {
		fail("sandbox-init: bad start line")
	}
	// From here on the sandbox reads no more from the agent: stdin is /dev/null, as for a cold one.
	if null, err := os.Open(os.DevNull); err == nil {
		syscall.Dup2(int(null.Fd()), 0)
	}
	if s.Cwd != "" {
		if err := os.MkdirAll(s.Cwd, 0o755); err != nil {
			fail("working directory " + s.Cwd + ": " + err.Error())
		}
		if err := os.Chdir(s.Cwd); err != nil {
			fail("working directory " + s.Cwd + ": " + err.Error())
		}
	}
	// Look the command up on the sandbox's PATH, not sandbox-init's.
	for _, kv := range s.Env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			os.Setenv("PATH", kv[5:])
		}
	}
	return s
}

// exitStatus is a child's wait status as a process exit code (the shell's and containerd's convention).
func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func main() {
	var s start
	if len(os.Args) > 2 && os.Args[1] == "--" {
		s = start{Args: os.Args[2:], Env: os.Environ()}
	} else if len(os.Args) == 1 {
		s = readStart()
	} else {
		fail("sandbox-init: usage: sandbox-init [-- command args…]")
	}
	path, err := exec.LookPath(s.Args[0])
	if errors.Is(err, exec.ErrDot) {
		err = nil // found through a relative PATH entry: runc runs it too
	}
	if err != nil {
		fail(err.Error()) // names the command: exec: "x": executable file not found in $PATH
	}
	// Before the child exists, so none of its signals or its end is missed. SIGCHLD has its own
	// channel: a full channel drops a signal, and a pending SIGCHLD already means "reap all".
	signals := make(chan os.Signal, 32)
	signal.Notify(signals, forwarded...)
	ended := make(chan os.Signal, 1)
	signal.Notify(ended, syscall.SIGCHLD)
	// The answer comes before the child runs, so it is the first line of the log.
	answer(map[string]any{"ok": true})
	// The child leads its own session and process group, as the container's process did when it
	// was PID 1 itself: its `kill 0` reaches its own group, not sandbox-init.
	child, err := syscall.ForkExec(path, s.Args, &syscall.ProcAttr{
		Env:   s.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		// Only reached when execve failed after the answer (rare: e.g. a binary for another machine).
		os.Stderr.WriteString("sandbox-init: exec " + path + ": " + err.Error() + "\n")
		os.Exit(126)
	}
	for {
		select {
		case sig := <-signals:
			// The child only, not its group: as Kubernetes signals a container's main process,
			// which decides how its own children stop (the agent SIGKILLs them all after the grace).
			syscall.Kill(child, sig.(syscall.Signal))
			continue
		case <-ended:
		}
		// Signals coalesce: one SIGCHLD may stand for many ended children, so reap until none is left.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if pid <= 0 {
				break
			}
			if pid == child {
				os.Exit(exitStatus(ws))
			}
		}
	}
}
