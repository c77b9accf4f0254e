package prometheus

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/electdtest"
	"github.com/electd/electd/internal/zktest"
)

// scrapeLeader runs electd as the one participant of an election
// on a real ZooKeeper, waits until it leads (so that every gauge has its
// leader's value and a lease has been renewed) and returns its /metrics.
// All process handling of this package is here, so that a shared harness
// can replace it.
func scrapeLeader(t *testing.T) []byte {
	t.Helper()
	zk := zktest.Start(t, zktest.Options{Servers: 1})
	bin := electdtest.Binary(t) // the one build of this test run

	addr := freeAddr(t)
	logPath := filepath.Join(t.TempDir(), "electd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--id", "metrics-1", "--zookeeper.servers", zk.ConnectString(),
		"--zookeeper.session_timeout", "4s", "--election.path", "/services/metrics", "--http.addr", addr)
	cmd.Env = cleanEnviron()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("electd's log:\n%s", b)
		}
	})

	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz/leader")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("electd did not lead within 30 s (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	return b
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// cleanEnviron is the test's environment without electd's own variables.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTD_") && !strings.HasPrefix(kv, "POD_NAME=") {
			out = append(out, kv)
		}
	}
	return out
}
