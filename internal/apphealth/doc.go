// Package apphealth checks the application next to electd over HTTP, the
// way a Kubernetes httpGet probe does (docs/design/handover.md, "Application
// health"): a GET every interval, bounded by a timeout; an answer from 200
// to 399 passes; failureThreshold failures in a row make the application
// unhealthy and successThreshold passes in a row make it healthy again.
// Until it has passed successThreshold checks its health is unknown, which
// counts as not healthy: electd does not stand for an application it has
// never seen working.
//
// The checker knows nothing of the election: it reports each change of
// health to a callback, and cmd/electd decides what a change means.
package apphealth
