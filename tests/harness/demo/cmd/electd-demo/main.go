// Command electd-demo is `make demo` (see tests/harness/demo). It lives beside the
// test infrastructure it runs (a real ZooKeeper, electd processes), since
// binaries under cmd/ import nothing from tests/:
//
//	go run ./tests/harness/demo/cmd/electd-demo --bin bin/electd          pauses between steps on a terminal
//	go run ./tests/harness/demo/cmd/electd-demo --bin bin/electd --ci     runs straight through; exit 1 on a bad step
//
// Without a terminal on stdin it never pauses. Ctrl-C stops it, and everything it
// started, at once.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/electd/electd/tests/harness/demo"
)

func main() {
	bin := flag.String("bin", "bin/electd", "the electd binary (make build writes bin/electd)")
	ci := flag.Bool("ci", false, "no pauses between steps (also when stdin is not a terminal)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := demo.Options{Bin: *bin, Out: os.Stdout, Err: os.Stderr, Color: terminal(os.Stdout) && os.Getenv("NO_COLOR") == ""}
	if !*ci && terminal(os.Stdin) {
		opts.Pause = pauser(bufio.NewReader(os.Stdin), opts.Color)
	}
	err := demo.Run(ctx, opts)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "\ndemo: interrupted; everything it started is stopped")
		os.Exit(130)
	case err != nil:
		os.Exit(1)
	}
}

// terminal reports whether f is a character device (a terminal, as far as the demo
// cares), without a dependency for isatty.
func terminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// pauser returns a Pause that waits for Enter on in (or its end), or for ctx to end
// (Ctrl-C).
func pauser(in *bufio.Reader, color bool) func(context.Context) error {
	prompt := "\n-- press Enter to continue (Ctrl-C quits) --"
	if color {
		prompt = "\n\033[1m-- press Enter to continue (Ctrl-C quits) --\033[0m"
	}
	return func(ctx context.Context) error {
		fmt.Print(prompt)
		line := make(chan error, 1)
		go func() {
			_, err := in.ReadString('\n')
			line <- err
		}()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-line:
			if errors.Is(err, io.EOF) {
				return nil // no more input: go on as in CI
			}
			return err
		}
	}
}
