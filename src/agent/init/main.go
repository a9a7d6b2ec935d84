// sandbox-init is the first process of a warm sandbox container: the container is created and
// started ahead of time with this as its init, and waits here for the sandbox it will become.
// The agent writes one JSON line on its stdin — the sandbox's args, env and working directory —
// and sandbox-init answers one JSON line on stdout ({"ok":true}, or {"error":"..."} when the
// command cannot run), then replaces itself with the command (execve), which so becomes PID 1
// of the container with everything the container was made with: namespaces, cgroup limits,
// capabilities, seccomp, user. The agent strips the answer line from the sandbox's log.
//
// Static (CGO_ENABLED=0) so it runs in any image; it is bind-mounted read-only into the container.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
)

type start struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

func answer(v map[string]any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func fail(msg string) {
	answer(map[string]any{"error": msg})
	os.Exit(127)
}

func main() {
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
	path, err := exec.LookPath(s.Args[0])
	if err != nil {
		fail("exec: " + s.Args[0] + ": " + err.Error())
	}
	answer(map[string]any{"ok": true})
	err = syscall.Exec(path, s.Args, s.Env)
	// Only reached when execve failed after the answer (rare: e.g. a binary for another machine).
	os.Stderr.WriteString("sandbox-init: exec " + path + ": " + err.Error() + "\n")
	os.Exit(126)
}
