package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
)

// The applications' languages.
const (
	Go     = "go"
	Python = "python"
)

// Python3 runs app.py: Debian's python3 (scripts/install-deps.sh installs
// it), the standard library only. A missing interpreter fails the test.
const Python3 = "/usr/bin/python3"

// startTimeout bounds an application's start: a JVM is not involved, so
// this only ends a hang.
const startTimeout = 30 * time.Second

// App is one application process: the Go or the Python one, listening on
// Addr, appending to Ledger. A test may SIGKILL it (Proc.Kill), stop it
// (Proc.Pause, SIGSTOP: it accepts connections and never answers) and start
// it again in place (Restart, Relaunch), with the same address and ledger.
type App struct {
	Name, Lang, Addr, Ledger string
	Proc                     *electdtest.Proc

	bin  string
	spec electdtest.Spec
}

// newApp prepares an application named name in language lang, its files
// in dir.
func newApp(lang, name, dir string) (*App, error) {
	addr, err := electdtest.FreeAddr()
	if err != nil {
		return nil, err
	}
	a := &App{Name: name, Lang: lang, Addr: addr, Ledger: filepath.Join(dir, "ledger-"+name+".jsonl")}
	a.spec = electdtest.Spec{Name: "app-" + name, Dir: dir, Addr: addr}
	switch lang {
	case Go:
		// This very test binary, which MainIfApp turns into the application;
		// the -test.run pattern matches nothing should a package forget it.
		if a.bin, err = os.Executable(); err != nil {
			return nil, err
		}
		cfg, _ := json.Marshal(AppConfig{Name: name, Listen: addr, Ledger: a.Ledger})
		a.spec.Args = []string{"-test.run=^NoTestIsAnApplication$"}
		a.spec.Env = []string{appEnv + "=" + string(cfg)}
	case Python:
		if _, err := os.Stat(Python3); err != nil {
			return nil, fmt.Errorf("ledger: the Python application needs %s (scripts/install-deps.sh installs python3): %w", Python3, err)
		}
		root, err := electdtest.ModuleRoot()
		if err != nil {
			return nil, err
		}
		a.bin = Python3
		a.spec.Args = []string{filepath.Join(root, "tests", "harness", "ledger", "app.py"), name, addr, a.Ledger}
	default:
		return nil, fmt.Errorf("ledger: no application in %q", lang)
	}
	return a, nil
}

// Start starts an application for t (killed when t ends) and waits until it
// answers.
func Start(t testing.TB, lang, name, dir string) *App {
	t.Helper()
	a, err := newApp(lang, name, dir)
	if err != nil {
		t.Fatal(err)
	}
	a.Restart(t)
	return a
}

// Restart starts the application (again, after a kill) for t, in place.
func (a *App) Restart(t testing.TB) {
	t.Helper()
	a.Proc = electdtest.StartProgram(t, a.bin, a.spec)
	if err := a.waitReady(); err != nil {
		t.Fatal(err)
	}
}

// Launch starts an application for a caller without a testing.TB (the
// chaos suite), which must kill it.
func Launch(lang, name, dir string) (*App, error) {
	a, err := newApp(lang, name, dir)
	if err != nil {
		return nil, err
	}
	return a, a.Relaunch()
}

// Relaunch is Restart for a caller without a testing.TB.
func (a *App) Relaunch() error {
	p, err := electdtest.Launch(a.bin, a.spec)
	if err != nil {
		return err
	}
	a.Proc = p
	if err := a.waitReady(); err != nil {
		p.Kill()
		return err
	}
	return nil
}

// waitReady waits until the application answers GET /healthz.
func (a *App) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := a.Proc.WaitHTTP(ctx, "/healthz", 200); err != nil {
		return fmt.Errorf("ledger: %s application %s: %w", a.Lang, a.Name, err)
	}
	return nil
}

// Entries reads the application's ledger.
func (a *App) Entries() ([]Entry, error) { return Read(a.Ledger) }
