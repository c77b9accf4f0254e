// Command electd is a leader-election sidecar on Apache ZooKeeper. It joins
// one election. Over HTTP and Prometheus, it tells the application next to
// it whether it leads and who does. See docs/design/ and --help.
//
// main only wires. The parts:
//   - the configuration: internal/config's Load;
//   - the HTTP API: internal/httpapi, served by internal/httpserver;
//   - the logs: internal/logging;
//   - the client commands: internal/cli.
//
// daemon.go builds one electd from them, serve.go runs it and shutdown.go
// stops it.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/electd/electd/internal/cli"
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/httpserver"
	"github.com/electd/electd/internal/logging"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run returns the exit status: 0 clean, 1 runtime failure, 2 bad
// configuration. environ is the process's environment (os.Environ).
func run(args, environ []string, stdout, stderr io.Writer) int {
	// `electd status` and `electd release` talk to a running daemon.
	if cli.IsCommand(args) {
		return runClient(args, environ, stdout, stderr)
	}
	// `electd __exec-guard` is exec mode's guard process (exec.go).
	if code, ok := runGuard(args); ok {
		return code
	}
	// `electd help`, `electd version`, and a command electd lacks.
	if code, ok := runBuiltin(args, environ, stdout, stderr); ok {
		return code
	}
	cfg, err := config.Load(args, environ)
	switch {
	case err != nil:
		return fail(stderr, err)
	case cfg.Help:
		printHelp(stdout)
		return 0
	case cfg.Version:
		printVersion(stdout)
		return 0
	case cfg.Validate:
		warnUnknownEnv(logging.New(stderr, cfg.Log.Level, cfg.Log.Format), cfg.UnknownEnv)
		config.WriteEffective(stdout, &cfg.Config)
		return 0
	}

	// From here on the daemon logs through a queue that never blocks
	// (logging.AsyncWriter). A closed stderr no longer kills it.
	survivePipes()
	logs := logging.NewAsyncWriter(stderr, logging.DroppedNotice(cfg.Log.Level, cfg.Log.Format))
	defer logs.Flush(exitFlush)
	log := logging.New(logs, cfg.Log.Level, cfg.Log.Format)
	if certs := cfg.Prepared.HTTPCert; certs != nil {
		certs.OnReload = httpserver.LogCertReload(log)
	}
	warnUnknownEnv(log, cfg.UnknownEnv)
	return serve(cfg, logs, log)
}

// runClient runs a client command (internal/cli) until it is done or
// SIGINT or SIGTERM ends it.
func runClient(args, environ []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	getenv := func(k string) string { return env[k] }
	return cli.Run(ctx, args, cli.Env{Stdout: stdout, Stderr: stderr, Getenv: getenv, IsTerminal: cli.IsTerminal(stdout)})
}

// exitFlush bounds how long the last log lines may hold the exit.
const exitFlush = 500 * time.Millisecond

func warnUnknownEnv(log *slog.Logger, names []string) {
	for _, name := range names {
		log.Warn("ignoring unknown environment variable", "name", name)
	}
}

// fail prints a bad configuration's or command line's errors, one line
// each, and returns status 2.
func fail(stderr io.Writer, err error) int {
	for line := range strings.Lines(err.Error()) {
		fmt.Fprintf(stderr, "electd: %s\n", strings.Join(strings.Fields(line), " "))
	}
	return 2
}

// printHelp is --help: the keys and flags (internal/config), then the
// commands, the signals and exec mode.
func printHelp(w io.Writer) {
	config.WriteHelp(w)
	fmt.Fprint(w, `
Commands (status and release each with --help):
  electd status [--addr URL] [--watch]   the election as a table
  electd release [--to ID] [--addr URL]  ask the leader to step down
  electd run [--KEY VALUE ...] -- CMD    join the election and run CMD only
                                         while leading (exec mode, below)
  electd wait-ready [--addr URL]         wait until electd has joined and knows
                                         the leader (an init container)
  electd hold-listener [--dir DIR]       keep electd's ports open while it
                                         restarts (listen_hold_dir)
  electd help [COMMAND]                  this help (--help), or a command's
  electd version                         the version and commit (--version)

Exit status: 0 after a clean shutdown, 1 when running fails (e.g. http.addr
cannot be bound, or shutdown_timeout ran out), 2 for a bad configuration or
command line, with one line per error. Unknown ELECTD_* environment
variables only log a warning.
`)
	printSignals(w)
	printRunHelp(w)
}
