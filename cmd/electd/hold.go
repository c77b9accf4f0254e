package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"

	"github.com/electd/electd/internal/listenhold"
	"github.com/electd/electd/internal/logging"
)

// holdDirEnv is listen_hold_dir's variable: the holder's container
// may take it from the same place as electd's.
const holdDirEnv = "ELECTD_LISTEN_HOLD_DIR"

// runHold is `electd hold-listener`: it keeps copies of electd's
// listening sockets (its API's, its proxy's) in the directory electd
// shares with it (listen_hold_dir), so that they outlive a crash of electd
// (docs/design/kubernetes.md, "A crashed sidecar, a lost node"). It binds
// nothing itself: it asks electd for them when it starts, and electd
// hands over what it binds. It runs until SIGTERM or SIGINT.
func runHold(args, environ []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("hold-listener", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the directory shared with electd, listen_hold_dir (default $"+holdDirEnv+")")
	format := fs.String("log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("hold-listener: %s: unexpected argument", fs.Arg(0)))
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, holdDirEnv+"="); ok && *dir == "" {
			*dir = v
		}
	}
	if *dir == "" {
		return fail(stderr, fmt.Errorf("hold-listener: --dir or %s is required", holdDirEnv))
	}
	if *format != "text" && *format != "json" {
		return fail(stderr, fmt.Errorf("hold-listener: --log-format %q: text or json", *format))
	}
	log := logging.New(stderr, "info", *format)
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	h, err := listenhold.Open(*dir, listenhold.RoleHolder, log)
	if err != nil {
		log.Error("electd hold-listener cannot start", "err", err)
		return 1
	}
	defer h.Close()
	// Serving came first: electd, starting meanwhile, hands over what it binds.
	if err := h.Fetch(); err != nil {
		log.Error("refused what electd handed over", "err", err)
	}
	log.Info("holding electd's listening sockets", "dir", *dir, "held", h.Held())
	<-ctx.Done()
	log.Info("electd hold-listener stopped", "held", h.Held())
	return 0
}
