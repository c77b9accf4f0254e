// Package kube mirrors an election's leadership into Kubernetes, for the
// label flavour of the manifests (docs/design/kubernetes.md, "Kubernetes").
// While this participant leads, its own pod carries <leader_label>=true. A
// Service that selects the label routes to the leader, and every pod can
// stay Ready. Optionally the leader is also mirrored into a
// coordination.k8s.io/v1 Lease, so `kubectl get lease` names it.
//
// ZooKeeper stays the source of truth. Nothing here feeds back into the
// election. A failing API server only shows in Status, the log and the
// Recorder.
//
// What a Labeler promises:
//   - A leader first removes the label from every other pod that carries it
//     (a crashed or cut-off former leader). Then it sets it on its own pod.
//     It re-checks every RecheckInterval. An old leader's request may land
//     late, after it lost leadership; that label is gone within
//     RecheckInterval plus one API round-trip.
//   - A participant that does not lead removes the label from its own pod.
//     It does so at start (a restarted container may find it), when it
//     stops leading, and in Stop. Shutdown calls Stop before it deletes the
//     ZooKeeper node. While leadership moves, the Service then has no
//     endpoint rather than two.
//   - Failed calls are retried with backoff, counted, logged (rate-limited)
//     and shown in Status. The election never waits on them.
//
// A Gate, opt-in, keeps the pod condition electd.io/participant for a
// readinessGates entry (docs/design/kubernetes.md, "A readiness gate for
// the real multi-node case"). Each participant sets it True on its own pod
// once joined; the leader sets it False on the pod of a participant that
// left the election for a second. On a lost node no kubelet fails the
// pod's probes: the gate takes the pod out of the Service instead.
//
// It talks to the API server with net/http and JSON merge patches, not
// client-go. Five REST calls do not justify client-go's dependency tree
// and binary size in a sidecar that runs in every pod.
package kube
