// Package kube mirrors an election's leadership into Kubernetes, for the
// label flavour of the manifests (docs/design/kubernetes.md, "Kubernetes"): while this
// participant leads, its own pod carries <leader_label>=true, so a Service
// that selects the label routes to the leader and every pod can stay Ready.
// Optionally it also mirrors the leader into a coordination.k8s.io/v1 Lease,
// so `kubectl get lease` names it. ZooKeeper stays the source of truth:
// nothing here feeds back into the election, and a failing API server only
// shows in Status, the log and the Recorder.
//
// What a Labeler promises:
//   - A leader first removes the label from every other pod that carries it
//     (a crashed or cut-off former leader), then sets it on its own pod. It
//     re-checks every RecheckInterval, so a label written late by an old
//     leader (a request that was in flight while it lost leadership) is gone
//     within RecheckInterval + one API round-trip of landing.
//   - A participant that does not lead removes the label from its own pod:
//     at start (a restarted container may find it), when it stops leading,
//     and in Stop, which shutdown calls before it deletes the ZooKeeper node,
//     so the Service has no endpoint rather than two while leadership moves.
//   - Failed calls are retried with backoff, counted, logged (rate-limited)
//     and shown in Status; the election never waits on them.
//
// It talks to the API server with net/http and JSON merge patches instead of
// client-go: five REST calls do not justify the dependency tree and binary
// size client-go brings to a sidecar that runs in every pod.
package kube
