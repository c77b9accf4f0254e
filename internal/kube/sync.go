package kube

import (
	"context"
	"net/http"
)

// labelValue is the value of the leader label; a Service selects <label>: "true".
const labelValue = "true"

// takeLabel is the leader's round for the label. It removes the label from
// every other pod that carries it, then makes sure the own pod carries
// <label>=true. The list shows whether the own pod has it already. So a
// leader's periodic check costs one list and no write.
func (l *Labeler) takeLabel(ctx context.Context) error {
	ns, key, self := l.cfg.Namespace, l.cfg.LeaderLabel, l.cfg.PodName
	var pods []podMeta
	err := l.call(ctx, opListPods, func(ctx context.Context) (err error) {
		pods, err = l.api.labelledPods(ctx, ns, key)
		return err
	})
	if err != nil {
		return err
	}
	mine := false
	for _, p := range pods {
		if p.Name == self {
			mine = p.Labels[key] == labelValue
			continue
		}
		err := l.call(ctx, opPatchPod, func(ctx context.Context) error {
			err := l.api.setLabel(ctx, ns, p.Name, key, nil)
			if hasCode(err, http.StatusNotFound) {
				return nil // deleted meanwhile
			}
			return err
		})
		if err != nil {
			return err
		}
		l.log.Warn("removed the leader label from another pod", "other_pod", p.Name, "value", p.Labels[key])
	}
	if mine {
		l.setOwnLabel(yes)
		return nil
	}
	// Leadership may have ended since the status that started this round.
	if !l.src.Status().IsLeader {
		return nil
	}
	// Until the answer arrives, the write may or may not land; a cancelled
	// call can still be applied. A later dropLabel must not skip it.
	l.ownLabel = unknown
	v := labelValue
	err = l.call(ctx, opPatchPod, func(ctx context.Context) error {
		return l.api.setLabel(ctx, ns, self, key, &v)
	})
	if err != nil {
		return err
	}
	l.setOwnLabel(yes)
	l.log.Info("labelled the own pod as leader")
	return nil
}

// dropLabel removes the label from the own pod unless this Labeler knows it
// is absent. Removing an absent label is a no-op on the server.
func (l *Labeler) dropLabel(ctx context.Context) error {
	if l.ownLabel == no {
		return nil
	}
	had := l.ownLabel == yes
	err := l.call(ctx, opPatchPod, func(ctx context.Context) error {
		return l.api.setLabel(ctx, l.cfg.Namespace, l.cfg.PodName, l.cfg.LeaderLabel, nil)
	})
	if err != nil {
		return err
	}
	l.setOwnLabel(no)
	if had {
		l.log.Info("removed the leader label from the own pod")
	}
	return nil
}

func (l *Labeler) setOwnLabel(v tri) {
	l.ownLabel = v
	l.update(func(s *Status) { s.Labelled = v == yes })
}

// holdLease makes the Lease name this participant and renews it. A new
// holder gets acquireTime now and one more leaseTransitions.
func (l *Labeler) holdLease(ctx context.Context) error {
	ns, name, self := l.cfg.Namespace, l.cfg.LeaseName, l.cfg.Identity
	cur, err := l.readLease(ctx)
	if err != nil {
		return err
	}
	now := microTime(l.cfg.Clock.Now())
	dur := int32(l.cfg.LeaseDuration().Seconds())
	spec := leaseSpec{HolderIdentity: &self, LeaseDurationSeconds: &dur, RenewTime: &now}
	takeover := cur == nil || cur.holder() != self
	if takeover && !l.src.Status().IsLeader {
		return nil // leadership ended since this round started
	}
	if takeover {
		transitions := int32(0)
		if cur != nil && cur.Spec.LeaseTransitions != nil {
			transitions = *cur.Spec.LeaseTransitions + 1
		}
		spec.AcquireTime, spec.LeaseTransitions = &now, &transitions
	}
	l.ownLease = unknown // as in takeLabel: the write may land even if cancelled
	if cur == nil {
		err = l.call(ctx, opCreateLease, func(ctx context.Context) error {
			return l.api.createLease(ctx, ns, name, spec)
		})
	} else {
		err = l.call(ctx, opPatchLease, func(ctx context.Context) error {
			return l.api.patchLease(ctx, ns, name, cur.Metadata.ResourceVersion, spec)
		})
	}
	if err != nil {
		return err
	}
	if takeover {
		l.log.Info("lease names this participant", "previous_holder", holderOf(cur))
	}
	l.setOwnLease(yes)
	return nil
}

// releaseLease clears holderIdentity if the Lease still names this
// participant. Until the next leader writes it, `kubectl get lease` then
// shows no holder rather than a stale one.
func (l *Labeler) releaseLease(ctx context.Context) error {
	if l.ownLease == no {
		return nil
	}
	cur, err := l.readLease(ctx)
	if err != nil {
		return err
	}
	if cur == nil || cur.holder() != l.cfg.Identity {
		l.setOwnLease(no)
		return nil
	}
	now := microTime(l.cfg.Clock.Now())
	err = l.call(ctx, opPatchLease, func(ctx context.Context) error {
		return l.api.patchLease(ctx, l.cfg.Namespace, l.cfg.LeaseName, cur.Metadata.ResourceVersion,
			map[string]any{"holderIdentity": nil, "renewTime": now})
	})
	if err != nil {
		return err
	}
	l.setOwnLease(no)
	l.log.Info("lease released")
	return nil
}

// readLease returns the Lease, or nil if it does not exist.
func (l *Labeler) readLease(ctx context.Context) (*lease, error) {
	var cur *lease
	err := l.call(ctx, opGetLease, func(ctx context.Context) (err error) {
		cur, err = l.api.getLease(ctx, l.cfg.Namespace, l.cfg.LeaseName)
		if hasCode(err, http.StatusNotFound) {
			cur, err = nil, nil
		}
		return err
	})
	return cur, err
}

func (l *Labeler) setOwnLease(v tri) {
	l.ownLease = v
	l.update(func(s *Status) { s.LeaseHeld = v == yes })
}

func holderOf(l *lease) string {
	if l == nil {
		return ""
	}
	return l.holder()
}
