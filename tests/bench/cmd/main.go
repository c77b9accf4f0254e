// Command electd-bench measures electd against Apache Curator and ZooKeeper
// itself on this machine: handoff, failover, ZooKeeper load, footprint, the
// forwarding proxy and scale (BENCHMARKS.md). It starts every server and process it needs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/electd/electd/tests/bench"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
)

func main() {
	ledger.MainIfApp() // a copy of this binary started as the fault section's application
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg := bench.Defaults()
	fs := flag.NewFlagSet("electd-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Each of these flags sets a field of cfg; its value there is the default.
	for _, f := range []struct {
		name  string
		field any // *int, *time.Duration or *string
		usage string
	}{
		{"electd", &cfg.Electd, "electd binary to run (default: go build ./cmd/electd)"},
		{"rounds", &cfg.Rounds, "graceful handoff rounds (electd, Curator, floor)"},
		{"warmup", &cfg.Warmup, "rounds run first and not counted"},
		{"policy-rounds", &cfg.PolicyRounds, "graceful handoff rounds between two electd, election.handoff alternating newest and next"},
		{"session-timeout", &cfg.SessionTimeout, "requested session timeout"},
		{"crash-rounds", &cfg.CrashRounds, "SIGKILL failover rounds"},
		{"crash-timeout", &cfg.CrashTimeout, "requested session timeout in the crash rounds"},
		{"idle", &cfg.IdleParticipants, "idle participants of electd and of Curator"},
		{"idle-window", &cfg.IdleWindow, "how long idle load is counted"},
		{"scale-rounds", &cfg.ScaleRounds, "handoffs timed at each scale"},
		{"elections", &cfg.Elections, "elections of 3 participants, in-process on 3 servers"},
		{"footprint-window", &cfg.FootprintWindow, "idle electd RSS and CPU window"},
		{"load", &cfg.LoadDuration, "/healthz/leader load duration"},
		{"load-conns", &cfg.LoadConns, "/healthz/leader keep-alive connections"},
		{"forward-requests", &cfg.ForwardRequests, "requests timed one at a time along each forwarding path"},
		{"forward-conns", &cfg.ForwardConns, "kept-alive clients that drive each forwarding path to saturation"},
		{"forward-load", &cfg.ForwardLoad, "how long each forwarding path is driven to saturation"},
		{"fault-rounds", &cfg.FaultRounds, "rounds of each fault under load through the forwarding proxies (0: none)"},
		{"fault-window", &cfg.FaultWindow, "how long each fault lasts before it heals"},
		{"forward-rounds", &cfg.ForwardRounds, "rounds of each hand-over under load through the forwarding proxies"},
		{"zk-heap", &cfg.ZKHeap, "-Xmx of the 3-server ensemble's JVMs (scale section)"},
		{"join-limit", &cfg.JoinLimit, "longest wait for a scale configuration to join (default 30s + 10ms per participant)"},
	} {
		switch p := f.field.(type) {
		case *int:
			fs.IntVar(p, f.name, *p, f.usage)
		case *time.Duration:
			fs.DurationVar(p, f.name, *p, f.usage)
		case *string:
			fs.StringVar(p, f.name, *p, f.usage)
		default:
			panic(fmt.Sprintf("flag -%s: a field of type %T", f.name, p))
		}
	}
	only := fs.String("only", "", "comma-separated sections to run: "+strings.Join(bench.Sections, ","))
	scale := fs.String("scale", joinInts(cfg.Scale), "participants of one in-process election on 3 servers, comma-separated")
	faults := fs.String("faults", "", "comma-separated faults of the forward section to run (default all): "+strings.Join(bench.FaultKeys(), ","))
	budget := fs.Int64("mem-budget-mib", cfg.MemBudget>>20, "stop a scale size when it grows the bench process's RSS by more than this (MiB)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process (the in-process participants of the scale section) to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	reportDir := fs.String("report-dir", "docs/bench", "also write the report, headed by the commit, date, machine and load, into this directory\n(relative: to the module's root) as <sections>-<commit>.md; empty: stdout only")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.MemBudget = *budget << 20
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *faults != "" {
		cfg.Faults = strings.Split(*faults, ",")
	}
	var err error
	if cfg.Scale, err = parseInts(*scale); err != nil {
		fmt.Fprintf(stderr, "electd-bench: -scale: %v\n", err)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "electd-bench: %v\n", err)
		return 2
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "electd-bench: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "electd-bench: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	root, err := electdtest.ModuleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "electd-bench: %v\n", err)
		return 2
	}
	build := bench.GitBuild(root) // before the run: what was built is what is measured
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		rep.Write(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "electd-bench: %v\n", err)
		return 1
	}
	if *reportDir != "" {
		dir := *reportDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		path, err := rep.ReportFile(dir, build, args)
		if err != nil {
			fmt.Fprintf(stderr, "electd-bench: report file: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "electd-bench: report written to %s\n", path)
	}
	return 0
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
