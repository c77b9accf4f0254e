package main

// Process-driving helpers of the tests of app health, candidacy,
// switchover and exec mode (follow_e2e_test.go, exec_e2e_test.go).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
)

// app is a small application next to one electd: its /healthz answers 200
// or 503 as the test says.
type app struct {
	srv     *httptest.Server
	healthy atomic.Bool
}

func startApp(t *testing.T, healthy bool) *app {
	t.Helper()
	a := &app{}
	a.healthy.Store(healthy)
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.healthy.Load() {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *app) url() string { return a.srv.URL + "/healthz" }

// post sends a POST with a body and the admin token; status 0 means no answer.
func (p *proc) post(path, token, body string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: requestTimeout}).Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// view reads /leader whatever its status (503 when no leader is known).
func (p *proc) view() api.Leader {
	p.t.Helper()
	var v api.Leader
	st, b := p.get("/leader")
	if st != http.StatusOK && st != http.StatusServiceUnavailable {
		p.t.Fatalf("%s: GET /leader: %d %s", p.id, st, b)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		p.t.Fatalf("%s: GET /leader: %v: %s", p.id, err, b)
	}
	return v
}

// leaderReason is /healthz/leader's reason.
func (p *proc) leaderReason() string {
	p.t.Helper()
	_, b := p.get("/healthz/leader")
	var v api.LeaderHealth
	_ = json.Unmarshal(b, &v)
	return v.Reason
}

// candidacy reads GET /candidacy.
func (p *proc) candidacy() api.Candidacy {
	p.t.Helper()
	var v api.Candidacy
	st, b := p.get("/candidacy")
	if st != http.StatusOK {
		p.t.Fatalf("%s: GET /candidacy: %d %s", p.id, st, b)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		p.t.Fatal(err)
	}
	return v
}

// leaders lists the live participants that answer 200 on /healthz/leader;
// more than one fails the test.
func leaders(t *testing.T, ps []*proc) []*proc {
	t.Helper()
	var ls []*proc
	for _, p := range ps {
		if p.alive() && p.leads() {
			ls = append(ls, p)
		}
	}
	if len(ls) > 1 {
		t.Fatalf("%s and %s both answer 200 on /healthz/leader", ls[0].id, ls[1].id)
	}
	return ls
}

// nobodyLeads waits until no participant leads and every one says so on
// /leader ("leader": null).
func nobodyLeads(t *testing.T, ps []*proc, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "nobody to lead", func() bool {
		if len(leaders(t, ps)) > 0 {
			return false
		}
		for _, p := range ps {
			if p.view().Leader != nil {
				return false
			}
		}
		return true
	})
}

// metricOf reads one series, failing the test when it is missing.
func (p *proc) metricOf(name string, labels ...string) float64 {
	p.t.Helper()
	v, err := p.metricValue(name, labels...)
	if err != nil {
		p.t.Fatal(err)
	}
	return v
}

// The command of the exec mode tests: a shell script that takes an
// exclusive flock on one lock file shared by all participants' commands
// and holds it as long as it (or anything it started) runs. The kernel
// drops the lock only when the last process holding it is gone, SIGKILL
// included, so a command that starts while another one of the election
// still runs cannot take it, and writes OVERLAP: that is the check that
// never two run at once, exact rather than sampled.
const execScript = `exec 9>>"$EXEC_DIR/lock"
if ! flock -n 9; then echo "OVERLAP $ELECTD_LEADER_ID $ELECTD_FENCING_TOKEN $$" >> "$EXEC_DIR/log"; fi
echo "start $ELECTD_LEADER_ID $ELECTD_FENCING_TOKEN $$" >> "$EXEC_DIR/log"
echo "$ELECTD_FENCING_TOKEN" > "$EXEC_DIR/token.$ELECTD_LEADER_ID"
echo "command of $ELECTD_LEADER_ID says hello on stdout (token $ELECTD_FENCING_TOKEN)"
trap 'echo "term $ELECTD_LEADER_ID $$" >> "$EXEC_DIR/log"; exit 0' TERM
[ -n "$EXEC_IGNORE_TERM" ] && trap 'echo "ignored $ELECTD_LEADER_ID $$" >> "$EXEC_DIR/log"' TERM
[ -n "$EXEC_EXIT" ] && exit "$EXEC_EXIT"
while :; do sleep 0.05; done
`

// execEvent is one line of the commands' log.
type execEvent struct {
	what, id string
	token    int64
	pid      int
}

func execLog(t *testing.T, dir string) []execEvent {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []execEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue // a line being written
		}
		e := execEvent{what: fs[0], id: fs[1]}
		if len(fs) == 4 {
			e.token, _ = strconv.ParseInt(fs[2], 10, 64)
			e.pid, _ = strconv.Atoi(fs[3])
		} else {
			e.pid, _ = strconv.Atoi(fs[2])
		}
		out = append(out, e)
	}
	return out
}

// noOverlap fails the test when a command ever found another running.
func noOverlap(t *testing.T, dir string) {
	t.Helper()
	for _, e := range execLog(t, dir) {
		if e.what == "OVERLAP" {
			t.Fatalf("%s's command (token %d) started while another participant's command still ran:\n%s", e.id, e.token, readLog(dir))
		}
	}
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	return string(b)
}

// starts returns the "start" events, in order.
func starts(t *testing.T, dir string) []execEvent {
	var out []execEvent
	for _, e := range execLog(t, dir) {
		if e.what == "start" {
			out = append(out, e)
		}
	}
	return out
}

// waitStart waits for the n-th start (1-based) of any command and returns it.
func waitStart(t *testing.T, dir string, n int, timeout time.Duration) execEvent {
	t.Helper()
	var e execEvent
	waitFor(t, timeout, fmt.Sprintf("start number %d of a command", n), func() bool {
		s := starts(t, dir)
		if len(s) < n {
			return false
		}
		e = s[n-1]
		return true
	})
	return e
}

// has reports whether the log holds what for pid.
func has(t *testing.T, dir, what string, pid int) bool {
	for _, e := range execLog(t, dir) {
		if e.what == what && e.pid == pid {
			return true
		}
	}
	return false
}

// pidAlive reports whether pid runs (a zombie does not).
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// startExecMember runs `electd run ... -- sh -c execScript` as a participant.
func startExecMember(t *testing.T, zk, path, id, dir string, extra []string, env ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"run"}, memberArgs(zk, path, id, "latch", addr, extra...)...)
	args = append(args, "--", "sh", "-c", execScript)
	return startElectd(t, id, addr, args, append([]string{"EXEC_DIR=" + dir}, env...))
}
