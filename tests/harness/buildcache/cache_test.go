package buildcache

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary act as one of several processes asking for one entry
// (see TestHelperProcess).
const helperEnv = "BUILDCACHE_HELPER"

// TestHelperProcess is not a test: run by TestOneFillAcrossProcesses as a child, it asks
// for the entry and counts its fill in a shared file.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		return
	}
	f := strings.SplitN(spec, "|", 3)
	kind, key, count := f[0], f[1], f[2]
	dir, err := Dir(kind, key, func(dir string) error {
		f, err := os.OpenFile(count, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintln(f, os.Getpid())
		f.Close()
		time.Sleep(300 * time.Millisecond) // a slow build: the others must wait for it
		return os.WriteFile(filepath.Join(dir, "built"), []byte("ok"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "built")); err != nil || string(b) != "ok" {
		t.Fatalf("entry %s without its content: %q, %v", dir, b, err)
	}
	if os.Getenv(holdEnv) != "" {
		fmt.Println("holding")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold the entry until the test closes stdin
	}
}

// holdEnv makes a helper keep its entry, as a test binary does for its whole run,
// until its standard input closes.
const holdEnv = "BUILDCACHE_HOLD"

// A process that holds an entry for its whole life (every test binary that runs electd
// does) must not keep another process from using it: test binaries run side by side.
func TestHeldEntryDoesNotBlockOthers(t *testing.T) {
	cache := isolate(t)
	count := filepath.Join(cache, "fills")
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	holder.Env = append(os.Environ(), helperEnv+"=kind|k1|"+count, holdEnv+"=1")
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = holder.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("the holder: %q %v", line, err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := Dir("kind", "k1", func(string) error { return fmt.Errorf("filled again") })
		got <- err
	}()
	// Dir waits for nothing here; without the fix it waited for the holder to exit,
	// which it does only when this test ends.
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("Dir beside a holder: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Dir still blocked after 30s by a process that holds the entry")
	}
}

func isolate(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	return cache
}

func TestOneFillAcrossProcesses(t *testing.T) {
	cache := isolate(t)
	count := filepath.Join(cache, "fills")
	var cmds []*exec.Cmd
	for range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"=kind|k1|"+count)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
	b, _ := os.ReadFile(count)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("%d fills by four processes asking at once, want 1 (%q)", n, b)
	}
}

func TestFailedFillLeavesNoEntry(t *testing.T) {
	isolate(t)
	if _, err := Dir("kind", "bad", func(string) error { return fmt.Errorf("compiler says no") }); err == nil {
		t.Fatal("Dir returned no error for a failed fill")
	}
	dir, err := Dir("kind", "bad", func(dir string) error { return os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err != nil {
		t.Errorf("the second fill's content is missing: %v", err)
	}
}

// Old entries beyond the most recent few go, unless a process holds them.
func TestPruneKeepsRecentAndHeld(t *testing.T) {
	isolate(t)
	root, err := Root("kind")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := range keep + 3 {
		dir := filepath.Join(root, fmt.Sprintf("old%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// old0, the oldest, is in use by this process.
	if _, err := Dir("kind", "old0", func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	des, _ := os.ReadDir(root)
	var dirs []string
	for _, de := range des {
		if de.IsDir() {
			dirs = append(dirs, de.Name())
		}
	}
	if len(dirs) != keep {
		t.Errorf("after pruning: %v, want %d entries", dirs, keep)
	}
	if _, err := os.Stat(filepath.Join(root, "old0")); err != nil {
		t.Errorf("the entry in use was pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "old1")); err == nil {
		t.Error("old1, unused and beyond the most recent, survived")
	}
}
