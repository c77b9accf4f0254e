package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/execmode"
)

// execSpec is `electd run`'s command.
type execSpec struct {
	command []string
}

// runArgs is what splitRun finds in the arguments.
type runArgs struct {
	isRun   bool     // the first argument was "run"
	command []string // what follows "--"
}

// splitRun takes `electd run [FLAGS] -- CMD [ARGS...]` apart into the
// daemon's flags and the command; other arguments pass unchanged.
func splitRun(args []string) ([]string, runArgs) {
	if len(args) == 0 || args[0] != "run" {
		return args, runArgs{}
	}
	flags := args[1:]
	i := slices.Index(flags, "--")
	if i < 0 {
		return flags, runArgs{isRun: true}
	}
	return flags[:i], runArgs{isRun: true, command: flags[i+1:]}
}

// apply checks exec mode's configuration and sets cfg's command. Errors
// name the key (or "run" for the command) and exit with status 2.
func (r runArgs) apply(cfg *Config) error {
	if !r.isRun {
		return nil
	}
	if len(r.command) == 0 || r.command[0] == "" {
		return config.Errorf("run", "give the command after --, e.g. electd run --election.path /jobs/report -- /usr/bin/report --daily")
	}
	if _, err := exec.LookPath(r.command[0]); err != nil {
		return config.Errorf("run", "%v", err)
	}
	if cfg.Exec.KillTimeout >= cfg.ShutdownTimeout {
		return config.Errorf("exec.kill_timeout", "%v must be shorter than shutdown_timeout (%v): shutdown stops the command first",
			cfg.Exec.KillTimeout, cfg.ShutdownTimeout)
	}
	if cfg.Election.Mode == string(election.ModeSelector) && cfg.Election.Term > 0 {
		return config.Errorf("election.term", "electd run cannot stop the command before a selector term ends "+
			"(the next leader's would start while it stops): use election.term 0s, or election.mode latch")
	}
	cfg.exec = &execSpec{command: r.command}
	return nil
}

// runGuard runs electd as exec mode's guard process (execmode.RunGuard)
// when args say so; electd starts it, nobody else should.
func runGuard(args []string) (int, bool) {
	if len(args) == 0 || args[0] != execmode.GuardCommand {
		return 0, false
	}
	return execmode.RunGuard(args[1:]), true
}

// commandEnviron is electd's environment without the secrets of its own
// configuration (zookeeper.auth, http.admin_token): the command needs
// neither, and `electd run` must not leak them into a job's environment.
// The command gets the ELECTD_* variables of execmode on top.
func commandEnviron() []string {
	secret := map[string]bool{}
	for _, k := range config.Keys() {
		if k.Secret {
			secret[k.Env] = true
		}
	}
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !secret[name] {
			out = append(out, kv)
		}
	}
	return out
}

// printRunHelp completes --help with exec mode.
func printRunHelp(w io.Writer) {
	fmt.Fprintf(w, `
Exec mode: electd run [--config FILE] [--KEY VALUE ...] -- CMD [ARGS...]
runs CMD only while this participant leads (as consul lock does), with the
HTTP API as usual. CMD runs in a process group of its own with stdout and
stderr passed through and these variables set: %s (pass it to
storage with every write), %s, %s, %s,
%s and %s. When leadership ends CMD gets SIGTERM, and
SIGKILL exec.kill_timeout later; when the lease runs out it gets SIGKILL at
once. A release, switchover or withdrawal stops CMD before leadership goes;
SIGTERM to electd stops CMD, then releases. CMD never outlives electd, even
SIGKILLed. When CMD exits on its own, exec.on_exit says what electd does:
release (re-queue at the back), restart, or exit (status 0 when CMD exited
0, else 1). zookeeper.auth and http.admin_token are not passed to CMD.
`, execmode.EnvFencingToken, execmode.EnvLeaderID, execmode.EnvLeaderNode, execmode.EnvLeaderSession,
		execmode.EnvElectionPath, execmode.EnvHTTPAddr)
}
