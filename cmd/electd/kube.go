package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/kube"
)

// kubeReleaseTimeout bounds the label's removal at shutdown.
const kubeReleaseTimeout = 3 * time.Second

// newKube builds the leader label and Lease mirror when
// kubernetes.leader_label or kubernetes.lease_name is set (docs/DESIGN.md,
// "Kubernetes"); nil otherwise.
func newKube(kc kube.Config, el *election.Elector, rec kube.Recorder, log *slog.Logger) (*kube.Labeler, error) {
	if !kc.Enabled() {
		return nil, nil
	}
	kc.Logger, kc.Recorder = log, rec
	l, err := kube.New(kc, el)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	log.Info("mirroring leadership into Kubernetes", "server", kc.Server, "namespace", kc.Namespace,
		"pod", kc.PodName, "label", kc.LeaderLabel, "lease", kc.LeaseName)
	return l, nil
}

// runKube runs the mirror beside the election until releaseKube stops it
// or ctx ends. The election never waits on it.
func (d *daemon) runKube(ctx context.Context) {
	if d.kube != nil {
		go d.kube.Run(ctx)
	}
}

// releaseKube removes the label from the own pod and gives up the Lease
// before the node is deleted, so that while leadership moves the Service
// has no endpoint rather than two. It takes at most kubeReleaseTimeout and
// half of what is left of shutdown_timeout: a dead API server must not hold
// up Resign, and the next leader removes a label left behind.
func (d *daemon) releaseKube(ctx context.Context) {
	if d.kube == nil {
		return
	}
	budget := kubeReleaseTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	kctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if err := d.kube.Stop(kctx); err != nil {
		d.log.Warn("could not remove the leader label before resigning; the next leader removes it", "err", err)
	}
}
