// Package electdtest drives real electd processes for the tests that need them (the
// end-to-end tests of cmd/electd, the chaos suite, the demo test) and for the demo itself.
//
//   - Binary builds ./cmd/electd once per `go test ./...` run, however many test binaries
//     ask (build.go), and skips the test in -short mode: every test that runs electd goes
//     through it, so that decision is made here and nowhere else.
//   - Start and Launch run one process from a Config (written as YAML with
//     docs/configuration.md's key names, independent of cmd/electd's own types) and/or raw
//     arguments and environment; its output goes to a log file, printed when the test
//     fails. Proc sends signals (SIGTERM, SIGKILL, SIGSTOP, SIGCONT, SIGHUP), waits for
//     the exit and reports its status.
//   - Proc's HTTP helpers read /healthz, /healthz/leader, /leader, /participants and
//     /metrics (parsed with prometheus/common/expfmt).
//   - Observer polls /healthz/leader of many processes into an invariant.Log, for the
//     checks of tests/invariant.
package electdtest
