package promtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/freeport"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/wait"
)

const (
	// readyTimeout bounds the wait for /-/ready: an empty TSDB opens in well
	// under a second, but not on a machine busy with other tests.
	readyTimeout = time.Minute
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 10 * time.Second
	// Job is the scrape job of Options.Targets: their series carry job="electd".
	Job = "electd"
)

// Options says what the server scrapes and evaluates.
type Options struct {
	// Targets are host:port addresses whose /metrics are scraped (job Job);
	// Server.SetTargets adds more while the server runs.
	Targets []string
	// RuleFiles are the rule files evaluated, as absolute paths.
	RuleFiles []string
	// Interval is the scrape interval, the scrape timeout and the rule
	// evaluation interval; default 1 s.
	Interval time.Duration
}

// Server is one Prometheus process.
type Server struct {
	Addr    string // 127.0.0.1:port of its web UI and HTTP API
	Dir     string // its configuration, data directory and log
	LogPath string
	API     v1.API // client_golang's client of the HTTP API

	proc      *proctest.Process
	targetsMu sync.Mutex // SetTargets' writes
}

// Binary returns the prometheus in PATH. In -short mode it skips t; otherwise
// a missing binary fails t, saying what to install.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("promtest: runs a Prometheus server; skipped in -short mode")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("promtest: %v: install Prometheus (make deps, or apt-get install prometheus)", err)
	}
	return bin
}

// Start runs Prometheus (Binary: skipped in -short mode) as o says and waits
// until it is ready. It is stopped when the test ends, and its log printed if
// the test failed.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary(t)
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.Mkdir(filepath.Join(dir, "targets"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config(o, filepath.Join(dir, "targets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// The port is found free and let go before the server binds it, so
	// another process may take it in between; the server then exits at once
	// and the next attempt takes another port.
	for attempt := 1; ; attempt++ {
		s, err := launch(bin, dir, cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("promtest: %v", err)
			}
			if t.Failed() {
				t.Logf("log of prometheus (%s, %s), last 60 lines:\n%s", s.Addr, s.LogPath, s.LogTail(60))
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		err = s.waitReady(ctx)
		cancel()
		if err == nil {
			return s
		}
		if attempt < 3 && !s.Alive() && strings.Contains(s.LogTail(20), "address already in use") {
			continue
		}
		t.Fatal(err)
	}
}

// config renders the server's configuration file; targetsDir holds the
// files of SetTargets.
func config(o Options, targetsDir string) ([]byte, error) {
	type staticConfig struct {
		Targets []string `yaml:"targets"`
	}
	type fileSDConfig struct {
		Files []string `yaml:"files"`
	}
	type scrapeConfig struct {
		JobName       string         `yaml:"job_name"`
		StaticConfigs []staticConfig `yaml:"static_configs,omitempty"`
		FileSDConfigs []fileSDConfig `yaml:"file_sd_configs"`
	}
	iv := model.Duration(o.Interval).String()
	var c struct {
		Global struct {
			ScrapeInterval     string `yaml:"scrape_interval"`
			ScrapeTimeout      string `yaml:"scrape_timeout"`
			EvaluationInterval string `yaml:"evaluation_interval"`
		} `yaml:"global"`
		RuleFiles     []string       `yaml:"rule_files,omitempty"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs,omitempty"`
	}
	c.Global.ScrapeInterval, c.Global.ScrapeTimeout, c.Global.EvaluationInterval = iv, iv, iv
	c.RuleFiles = o.RuleFiles
	job := scrapeConfig{JobName: Job, FileSDConfigs: []fileSDConfig{{Files: []string{filepath.Join(targetsDir, "*.json")}}}}
	if len(o.Targets) > 0 {
		job.StaticConfigs = []staticConfig{{Targets: o.Targets}}
	}
	c.ScrapeConfigs = []scrapeConfig{job}
	b, err := yaml.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("promtest: configuration: %w", err)
	}
	return b, nil
}

// launch starts one server on a free loopback port.
func launch(bin, dir, cfgPath string) (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("promtest: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	// No proxy: the server is on loopback, whatever the environment says.
	client, err := api.NewClient(api.Config{Address: "http://" + addr, RoundTripper: &http.Transport{Proxy: nil}})
	if err != nil {
		return nil, fmt.Errorf("promtest: %w", err)
	}
	s := &Server{Addr: addr, Dir: dir, LogPath: logPath, API: v1.NewAPI(client)}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = proctest.Group()
	if s.proc, err = proctest.Run(cmd, nil); err != nil {
		return nil, fmt.Errorf("promtest: start %s: %w", bin, err)
	}
	return s, nil
}

// freeAddr is where Prometheus listens: a port no other test binary or
// outgoing connection takes before it binds (tests/harness/freeport).
func freeAddr() (string, error) {
	a, err := freeport.Addrs(1)
	if err != nil {
		return "", fmt.Errorf("promtest: %w", err)
	}
	return a, nil
}

// waitReady polls /-/ready (tests/harness/wait) until it answers 200, failing when
// ctx ends or the server exits first.
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	err := wait.Until(ctx, readyTimeout, 50*time.Millisecond, func() error {
		resp, err := client.Get("http://" + s.Addr + "/-/ready")
		switch {
		case err == nil && resp.StatusCode == http.StatusOK:
			resp.Body.Close()
			return nil
		case !s.Alive():
			return wait.Stop(fmt.Errorf("promtest: prometheus exited (%v) before it was ready; log tail:\n%s", s.proc.Err(), s.LogTail(20)))
		case err == nil:
			resp.Body.Close()
			err = errors.New(resp.Status)
		}
		return err
	})
	if err != nil && s.Alive() {
		return fmt.Errorf("promtest: prometheus not ready at %s (last: %w); log tail:\n%s", s.Addr, err, s.LogTail(20))
	}
	return err
}

// Alive reports whether the process has not exited.
func (s *Server) Alive() bool { return !s.proc.Exited() }

// Stop sends SIGTERM and waits up to 10 s for the exit, then kills the
// server. Stopping a stopped server does nothing. The error says why the
// server did not exit cleanly.
func (s *Server) Stop() error {
	if !s.Alive() {
		return nil
	}
	if !s.proc.Stop(stopTimeout) {
		return fmt.Errorf("prometheus did not exit within %v of SIGTERM; killed", stopTimeout)
	}
	if err := s.proc.Err(); err != nil {
		return fmt.Errorf("prometheus exited with %w after SIGTERM", err)
	}
	return nil
}

// SetTargets makes the server scrape addrs (host:port, job Job) under name,
// in place of what an earlier call with that name gave; no addrs stops
// scraping them. Prometheus sees the change within seconds (file-based
// discovery: it watches the file, and passes changes on every 5 s).
func (s *Server) SetTargets(name string, addrs []string) error {
	s.targetsMu.Lock()
	defer s.targetsMu.Unlock()
	type group struct {
		Targets []string `json:"targets"`
	}
	groups := []group{}
	if len(addrs) > 0 {
		groups = append(groups, group{Targets: addrs})
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return fmt.Errorf("promtest: %w", err)
	}
	// Written aside and renamed, so that Prometheus never reads half a file.
	path := filepath.Join(s.Dir, "targets", name+".json")
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("promtest: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("promtest: %w", err)
	}
	return nil
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string { return electdtest.TailFile(s.LogPath, n) }
