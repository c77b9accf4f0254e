package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Sections of a run, in the order they run.
var Sections = []string{"floor", "handoff", "crash", "idle", "footprint", "forward", "scale"}

// Config sizes a run. Zero values take the defaults of Defaults.
type Config struct {
	// Electd is the electd binary to run; empty builds one (go build).
	Electd string
	// Only runs these sections (see Sections); empty runs all.
	Only []string
	// Rounds of graceful handoff (electd over HTTP, Curator in-process, the
	// ZooKeeper floor), after Warmup rounds that are not counted.
	Rounds, Warmup int
	// PolicyRounds of graceful handoff between two electd processes, the
	// leaving leader's election.handoff alternating newest and next.
	PolicyRounds int
	// SessionTimeout is requested by every participant but the crash rounds'.
	SessionTimeout time.Duration
	// CrashRounds of SIGKILL failover, with CrashTimeout requested.
	CrashRounds  int
	CrashTimeout time.Duration
	// IdleParticipants of electd and of Curator are watched for IdleWindow.
	IdleParticipants int
	IdleWindow       time.Duration
	// Scale lists the sizes of one election hosted in-process on a
	// 3-server ensemble; ScaleRounds handoffs are timed at each size.
	Scale       []int
	ScaleRounds int
	// Elections of 3 participants each, in-process on the ensemble.
	Elections int
	// FootprintWindow for an idle electd's RSS and CPU; LoadDuration of
	// /healthz/leader load over LoadConns keep-alive connections.
	FootprintWindow time.Duration
	LoadDuration    time.Duration
	LoadConns       int
	// ForwardRequests are sent one at a time along each path to time what
	// a forward adds; ForwardRounds of each hand-over run under load.
	ForwardRequests, ForwardRounds int
	// ForwardConns kept-alive clients drive each path to saturation for
	// ForwardLoad.
	ForwardConns int
	ForwardLoad  time.Duration
	// FaultRounds of each fault under load through the proxies (0: none),
	// each lasting FaultWindow before it heals.
	FaultRounds int
	FaultWindow time.Duration
	// Faults names the faults to run (FaultKeys); empty runs all.
	Faults []string
	// ZKHeap is the ensemble's -Xmx for the scale section (zktest's
	// default otherwise).
	ZKHeap string
	// ScaleWindow is how long the ensemble's idle load is counted at each
	// scale; SettleWindow how long the bench lets joins and start-ups
	// settle before it counts anything, and the background counted before
	// handoff rounds.
	ScaleWindow, SettleWindow time.Duration
	// JoinLimit bounds the wait for a scale configuration to join; 0 is
	// 30 s + 10 ms per participant.
	JoinLimit time.Duration
	// MemBudget stops a scale configuration whose joining grows the bench
	// process's RSS by more than this (bytes): the machine is shared.
	MemBudget int64
	// Progress receives a line per step; nil is quiet.
	Progress io.Writer
}

// Defaults is the full run of `make bench`.
func Defaults() Config {
	return Config{
		Rounds: 30, Warmup: 3, PolicyRounds: 40,
		SessionTimeout: 10 * time.Second,
		CrashRounds:    10, CrashTimeout: 2 * time.Second,
		IdleParticipants: 10, IdleWindow: 30 * time.Second,
		Scale: []int{1000}, ScaleRounds: 10,
		Elections:       1000,
		FootprintWindow: 30 * time.Second,
		LoadDuration:    5 * time.Second,
		LoadConns:       4,
		ForwardRequests: 2000, ForwardRounds: 5,
		ForwardConns: 16, ForwardLoad: 5 * time.Second,
		FaultRounds: 3, FaultWindow: 8 * time.Second,
		ZKHeap:       "1g",
		MemBudget:    6 << 30,
		ScaleWindow:  10 * time.Second,
		SettleWindow: 2 * time.Second,
	}
}

// Validate checks the sizes.
func (c Config) Validate() error {
	var errs []error
	for _, s := range c.Only {
		if !slices.Contains(Sections, s) {
			errs = append(errs, fmt.Errorf("unknown section %q (want %s)", s, strings.Join(Sections, ", ")))
		}
	}
	if c.Rounds < 1 || c.Warmup < 0 || c.PolicyRounds < 2 || c.CrashRounds < 1 || c.ScaleRounds < 1 || c.ForwardRounds < 1 || c.ForwardRequests < 1 {
		errs = append(errs, errors.New("rounds must be at least 1 (warm-up at least 0)"))
	}
	if c.IdleParticipants < 3 {
		errs = append(errs, errors.New("idle participants: at least 3 (a leader, its successor and a follower)"))
	}
	for _, f := range c.Faults {
		if !slices.Contains(FaultKeys(), f) {
			errs = append(errs, fmt.Errorf("unknown fault %q (want %s)", f, strings.Join(FaultKeys(), ", ")))
		}
	}
	if c.FaultRounds < 0 || (c.FaultRounds > 0 && c.FaultWindow < time.Second) {
		errs = append(errs, errors.New("faults: rounds at least 0, a window of at least 1s"))
	}
	if c.ForwardConns < 1 || c.ForwardLoad <= 0 {
		errs = append(errs, errors.New("forward load: at least 1 connection for a positive duration"))
	}
	if c.Elections < 0 || c.LoadConns < 1 {
		errs = append(errs, errors.New("elections must be >= 0 and load connections >= 1"))
	}
	for _, n := range c.Scale {
		if n < 3 {
			errs = append(errs, fmt.Errorf("scale size %d: at least 3", n))
		}
	}
	return errors.Join(errs...)
}

func (c Config) runs(section string) bool {
	return len(c.Only) == 0 || slices.Contains(c.Only, section)
}
