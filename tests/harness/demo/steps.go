package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// election: three sidecars join, one after another so that the story is
// the same on every run (web-1 leads); all agree.
func (d *demo) election(ctx context.Context) error {
	d.out.step("1. three sidecars join %s one after another (session_timeout %s)", electionPath, sessionTimeout)
	d.out.cmd("export TOKEN=%s     # the admin token: each sidecar's ELECTD_HTTP_ADMIN_TOKEN", d.token)
	zk := d.zk.Member(1).Addr()
	for i := 1; i <= sidecarCount; i++ {
		id := fmt.Sprintf("web-%d", i)
		p, err := electdtest.Launch(d.opts.Bin, electdtest.Spec{
			Dir: d.dir,
			Env: []string{"ELECTD_HTTP_ADMIN_TOKEN=" + d.token},
			Config: &electdtest.Config{
				ID: id, Advertise: fmt.Sprintf("127.0.0.1:%d", 8080+i),
				Servers: []string{zk}, SessionTimeout: sessionTimeout,
				Path: electionPath, LogFormat: "text", ShutdownTimeout: 5 * time.Second,
			},
		})
		if err != nil {
			return err
		}
		d.sidecars = append(d.sidecars, &sidecar{id: id, proc: p})
		// Joined, and knows who leads, before the next one starts.
		wctx, cancel := context.WithTimeout(ctx, healthyWithin)
		err = p.WaitHTTP(wctx, "/readyz", http.StatusOK)
		cancel()
		if err != nil {
			return err
		}
	}
	first := d.sidecars[0].proc
	cfg, err := os.ReadFile(first.ConfigPath)
	if err != nil {
		return err
	}
	d.out.info(fmt.Sprintf("%s's configuration (%s; the admin token comes from ELECTD_HTTP_ADMIN_TOKEN):", first.Name, first.ConfigPath))
	d.out.info("  " + strings.ReplaceAll(strings.TrimRight(string(cfg), "\n"), "\n", "\n  "))
	for _, s := range d.sidecars {
		d.out.info(fmt.Sprintf("%s: http://%s  pid %d", s.id, s.proc.Addr, s.proc.Pid()))
	}

	t0 := time.Now()
	p, err := d.waitAgreed(ctx, "", leaderWithin)
	if err != nil {
		return err
	}
	d.leader = p.agreed
	d.table(p)
	d.out.ok("one leader: %s (all %d sidecars agree, %d ms after the last one joined)", d.leader, sidecarCount, time.Since(t0).Milliseconds())
	return d.showLeader(ctx)
}

// showLeader shows the API: /leader on a follower, /healthz/leader and /metrics on the
// leader.
func (d *demo) showLeader(ctx context.Context) error {
	l := d.byID(d.leader)
	f := d.sidecars[(slices.Index(d.sidecars, l)+1)%len(d.sidecars)]
	d.out.cmd("curl -s http://%s/leader      # asked on follower %s", f.proc.Addr, f.id)
	_, body, err := ask3(ctx, f.proc.Get, "/leader")
	if err != nil {
		return err
	}
	d.out.info(strings.TrimSpace(string(body)))
	d.out.cmd("curl -s -w '%%{http_code}\\n' http://%s/healthz/leader   # asked on the leader", l.proc.Addr)
	st, body, err := ask3(ctx, l.proc.Get, "/healthz/leader")
	if err != nil {
		return err
	}
	d.out.info(fmt.Sprintf("%s\n%d", strings.TrimSpace(string(body)), st))
	h, err := electdtest.ParseHealth(st, body)
	if err != nil {
		return fmt.Errorf("/healthz/leader of %s: %q: %w", l.id, body, err)
	}
	d.token1 = h.FencingToken
	d.out.cmd("curl -s http://%s/metrics | grep -E '^electd_(is_leader|fencing_token|participants)'", l.proc.Addr)
	// The leader counts the queue 100 ms after it changes (a burst of
	// joins costs one read): wait for the count of every sidecar.
	var mfs map[string]*dto.MetricFamily
	var askErr error
	_ = wait.Until(ctx, leaderWithin, 20*time.Millisecond, func() error {
		if mfs, askErr = ask(ctx, l.proc.Metrics); askErr != nil {
			return wait.Stop(askErr)
		}
		if participantsOf(mfs) != sidecarCount {
			return errors.New("not every sidecar counted yet")
		}
		return nil
	})
	if askErr != nil {
		return askErr
	}
	for _, name := range []string{"electd_fencing_token", "electd_is_leader", "electd_participants"} {
		for _, line := range sampleLines(mfs[name]) {
			d.out.info(line)
		}
	}
	return nil
}

// handoff: SIGTERM to the leader; another leads, all agree, the token grows.
func (d *demo) handoff(ctx context.Context) error {
	old := d.byID(d.leader)
	d.out.step("2. stop the leader %s with SIGTERM: it answers 503, deletes its node, exits", old.id)
	d.out.cmd("kill -TERM %d", old.proc.Pid())
	t0 := time.Now()
	if err := old.proc.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	next, err := d.waitNewLeader(ctx, old.id, handoffWithin)
	if err != nil {
		return err
	}
	d.handoffMs = time.Since(t0).Milliseconds()
	exitErr, ok := old.proc.Wait(exitWithin)
	if !ok {
		return fmt.Errorf("%s did not exit within %v of SIGTERM", old.id, exitWithin)
	}
	old.gone = true
	status := electdtest.ExitStatus(exitErr)
	d.out.info(fmt.Sprintf("%s exited with status %d", old.id, status))
	if status != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM, want 0", old.id, status)
	}
	p, err := d.waitAgreed(ctx, old.id, handoffWithin)
	if err != nil {
		return err
	}
	if p.agreed != next.id {
		return fmt.Errorf("the first new leader was %s, now all agree on %s", next.id, p.agreed)
	}
	d.table(p)
	if token2 := p.tokens[next.id]; d.token1 > 0 && token2 > 0 {
		if token2 <= d.token1 {
			return fmt.Errorf("the fencing token did not grow: %d then %d", d.token1, token2)
		}
		d.out.info(fmt.Sprintf("fencing token: %d -> %d (a storage write guarded by it now rejects %s)", d.token1, token2, old.id))
	}
	d.out.ok("handoff: %s leads %d ms after SIGTERM to %s%s", next.id, d.handoffMs, old.id, electedNote(next, t0))
	d.leader = next.id
	return nil
}

// release: the admin token is needed; with it the leader re-queues and another leads.
func (d *demo) release(ctx context.Context) error {
	l := d.byID(d.leader)
	d.out.step("3. ask the leader %s to give up leadership: POST /leader/release", l.id)
	d.out.cmd("curl -s -w '%%{http_code}\\n' -X POST http://%s/leader/release    # no token", l.proc.Addr)
	st, body, err := d.post(ctx, l, "")
	if err != nil {
		return err
	}
	d.out.info(fmt.Sprintf("%s\n%d", strings.TrimSpace(string(body)), st))
	if st != http.StatusUnauthorized {
		return fmt.Errorf("release without a token answered %d, want 401", st)
	}
	d.out.cmd(`curl -s -w '%%{http_code}\n' -X POST -H "Authorization: Bearer $TOKEN" http://%s/leader/release`, l.proc.Addr)
	t0 := time.Now()
	if st, body, err = d.post(ctx, l, d.token); err != nil {
		return err
	}
	d.out.info(fmt.Sprintf("%s\n%d", strings.TrimSpace(string(body)), st))
	if st != http.StatusAccepted {
		return fmt.Errorf("release with the token answered %d, want 202", st)
	}
	if _, err := d.waitNewLeader(ctx, l.id, handoffWithin); err != nil {
		return err
	}
	d.releaseMs = time.Since(t0).Milliseconds()
	p, err := d.waitAgreed(ctx, l.id, handoffWithin)
	if err != nil {
		return err
	}
	d.table(p)
	if p.is[l.id] != "no" {
		return fmt.Errorf("%s after its release: %s, want a follower", l.id, p.is[l.id])
	}
	d.out.ok("release: %s answered 202; %s leads %d ms later%s, %s re-queued as a follower",
		l.id, p.agreed, d.releaseMs, electedNote(d.byID(p.agreed), t0), l.id)
	d.leader = p.agreed
	return nil
}

func (d *demo) post(ctx context.Context, s *sidecar, token string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.proc.Do(ctx, http.MethodPost, "/leader/release", token)
}

// ask3 is ask for a question with a path.
func ask3(ctx context.Context, f func(context.Context, string) (int, []byte, error), path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return f(ctx, path)
}

// sampleLines renders a gauge family's series as the exposition format writes them.
// participantsOf is electd_participants in mfs, or -1.
func participantsOf(mfs map[string]*dto.MetricFamily) int {
	mf := mfs["electd_participants"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return -1
	}
	return int(mf.GetMetric()[0].GetGauge().GetValue())
}

func sampleLines(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		name := mf.GetName()
		if len(labels) > 0 {
			name += "{" + strings.Join(labels, ",") + "}"
		}
		out = append(out, fmt.Sprintf("%s %g", name, m.GetGauge().GetValue()))
	}
	return out
}

// versionOf is the first line of `electd --version`.
func versionOf(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}
