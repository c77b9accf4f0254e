package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
)

// Run runs the configured sections and returns their figures. It starts
// every ZooKeeper server, electd process and JVM itself and stops them
// before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "electd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := &env{cfg: cfg, dir: dir, electd: cfg.Electd, out: cfg.Progress}
	if env.electd == "" {
		env.progress("building electd")
		if env.electd, err = buildGo(dir, "electd", "github.com/electd/electd/cmd/electd"); err != nil {
			return nil, err
		}
	}
	rep := &Report{Config: cfg, Machine: readMachine(), Started: time.Now(), StartLoad: loadAvg()}
	defer func() { rep.Took, rep.EndLoad = time.Since(rep.Started), loadAvg() }()
	if cfg.runs("floor") || cfg.runs("handoff") || cfg.runs("crash") || cfg.runs("idle") || cfg.runs("footprint") || cfg.runs("forward") {
		env.progress("starting a standalone ZooKeeper")
		if env.single, err = zktest.StartEnsemble(zktest.Options{}); err != nil {
			return nil, err
		}
		defer env.single.Close()
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"floor", func() (err error) {
			rep.Floor, err = runFloor(ctx, env, cfg.Warmup, cfg.Rounds)
			return err
		}},
		{"handoff", func() (err error) {
			rep.Handoff, rep.Curator, err = runHandoff(ctx, env, cfg.Warmup, cfg.Rounds)
			return err
		}},
		{"crash", func() (err error) {
			rep.Crash, err = runCrash(ctx, env, cfg.CrashRounds)
			return err
		}},
		{"idle", func() (err error) {
			rep.Idle, err = runIdle(ctx, env)
			return err
		}},
		{"footprint", func() (err error) {
			rep.Footprint, err = runFootprint(ctx, env)
			return err
		}},
		{"forward", func() (err error) {
			if rep.Forward, err = runForward(ctx, env); err != nil || cfg.FaultRounds == 0 {
				return err
			}
			rep.Forward.Faults, err = runFaults(ctx, env)
			return err
		}},
		{"scale", func() (err error) {
			rep.Scale, err = runScale(ctx, env)
			return err
		}},
	}
	for _, s := range steps {
		if !cfg.runs(s.name) {
			continue
		}
		start := time.Now()
		env.progress("section %s", s.name)
		load := loadAvg()
		if err := s.run(); err != nil {
			return rep, fmt.Errorf("%s: %w", s.name, err)
		}
		rep.Load = append(rep.Load, SectionLoad{Section: s.name, Before: load, After: loadAvg(), Took: time.Since(start)})
	}
	return rep, nil
}
