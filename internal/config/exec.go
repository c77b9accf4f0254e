package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/electd/electd/internal/election"
)

// splitRun takes `run [FLAGS] -- CMD [ARGS...]` (electd run, docs/design/handover.md
// "Exec mode") apart into the daemon's flags and the command; other
// arguments pass unchanged, with isRun false.
func splitRun(args []string) (flags, command []string, isRun bool) {
	if len(args) == 0 || args[0] != "run" {
		return args, nil, false
	}
	flags = args[1:]
	i := slices.Index(flags, "--")
	if i < 0 {
		return flags, nil, true
	}
	return flags[:i], flags[i+1:], true
}

// checkRun checks electd run's command and the keys that matter only in
// exec mode. path is $PATH, where a command without a slash is looked for.
func (c *Config) checkRun(command []string, path string, errs *errorList) {
	if len(command) == 0 || command[0] == "" {
		errs.add(errorf("run", "give the command after --, e.g. electd run --election.path /jobs/report -- /usr/bin/report --daily"))
	} else if err := lookPath(command[0], path); err != nil {
		errs.add(errorf("run", "%v", err))
	}
	if !errs.has("shutdown_timeout") && c.Exec.KillTimeout >= c.ShutdownTimeout {
		errs.add(errorf("exec.kill_timeout", "%v must be shorter than shutdown_timeout (%v): shutdown stops the command first",
			c.Exec.KillTimeout, c.ShutdownTimeout))
	}
	if c.Election.Mode == string(election.ModeSelector) && c.Election.Term > 0 {
		errs.add(errorf("election.term", "electd run cannot stop the command before a selector term ends "+
			"(the next leader's would start while it stops): use election.term 0s, or election.mode latch"))
	}
}

// lookPath is exec.LookPath with $PATH passed in: a name with a slash must
// be an executable file, a name without one is looked for in path.
func lookPath(name, path string) error {
	if strings.Contains(name, "/") {
		_, err := exec.LookPath(name) // reads no $PATH for such a name
		return err
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue // the current directory is never searched implicitly
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return nil
		}
	}
	return &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// WithoutSecrets is environ (os.Environ's form) without the variables of
// electd's own secrets (zookeeper.auth, http.admin_token): electd run's
// command needs neither, and must not see them in its environment.
func WithoutSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if k, ok := lookupEnv(name); !ok || !k.Secret {
			out = append(out, kv)
		}
	}
	return out
}

// lookupEnv returns the key whose variable is name.
func lookupEnv(name string) (Key, bool) {
	for _, k := range table {
		if k.Env == name {
			return k, true
		}
	}
	return Key{}, false
}
