package bench

import (
	"context"
	"fmt"
)

// runPolicies hands over rounds times between two electd processes whose
// election.handoff alternates, newest and next, round by round (the
// leaving leader's policy is the one that acts), so that the machine's
// drifting load weighs on both alike. With two participants the next in
// line is the newest: the two should take the same time (docs/design/handover.md,
// "Handoff": no reads then).
func runPolicies(ctx context.Context, env *env, warmup, rounds int, res *HandoffResult) error {
	rig := &handoffRig{env: env, opts: env.electdOpts("/bench/policy", env.cfg.SessionTimeout),
		policies: []string{"newest", "next"}}
	rig.opts.logLevel = "info"
	defer rig.close()
	for range 2 {
		if err := rig.add(ctx); err != nil {
			return err
		}
	}
	// Each round's leader is the daemon started that many rounds before:
	// whole pairs of warm-up keep the alternation aligned with the count.
	warmup += warmup % 2
	for i := range warmup + rounds {
		policy := rig.policies[i%2]
		took, _, _, err := rig.round(ctx)
		if err != nil {
			return fmt.Errorf("policy round %d (%s): %w", i+1, policy, err)
		}
		if i < warmup {
			continue
		}
		if policy == "newest" {
			res.Newest = append(res.Newest, took)
		} else {
			res.Next = append(res.Next, took)
		}
	}
	env.progress("handoff by policy: newest %s, next %s", res.Newest, res.Next)
	return nil
}
