package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// watchRetry is how long --watch waits before it reconnects to /events.
const watchRetry = time.Second

// watch is `electd status --watch`. It draws the table, then redraws it on
// every event of GET /events until ctx ends. A lost stream (the daemon
// restarting) is reconnected. Only a daemon unreachable at the start ends
// the command.
func (c *client) watch(ctx context.Context) int {
	events := make(chan string, 1)
	streamErr := make(chan error, 1)
	first := true
	for {
		sctx, cancel := context.WithCancel(ctx)
		connected := make(chan struct{})
		go func() { streamErr <- c.follow(sctx, connected, events) }()
		select {
		case <-connected:
			// The daemon sends the current view as the first event.
			first = false
			err := c.drawEvents(ctx, events, streamErr)
			cancel()
			if ctx.Err() != nil {
				return exitOK
			}
			fmt.Fprintf(c.Stderr, "electd status: lost %s/events: %v; reconnecting\n", c.base, err)
		case err := <-streamErr:
			cancel()
			if ctx.Err() != nil {
				return exitOK
			}
			if first {
				return c.failure(err)
			}
			fmt.Fprintf(c.Stderr, "electd status: %v; retrying in %v\n", err, watchRetry)
		case <-ctx.Done():
			cancel()
			<-streamErr
			return exitOK
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(watchRetry):
		}
	}
}

// drawEvents redraws once per event until the stream ends. Events that
// arrive during a redraw are folded into the next one.
func (c *client) drawEvents(ctx context.Context, events <-chan string, streamErr <-chan error) error {
	for {
		select {
		case kind := <-events:
			c.redraw(ctx, kind)
		case err := <-streamErr:
			return err
		}
	}
}

// redraw reads the election again and draws it. On a terminal it draws in
// place. Otherwise it appends each table under a line saying when and why.
func (c *client) redraw(ctx context.Context, why string) {
	ctx, cancel := context.WithTimeout(ctx, c.http.Timeout)
	defer cancel()
	v, err := c.fetchView(ctx)
	var b strings.Builder
	if c.IsTerminal {
		b.WriteString(clearScreen)
	}
	fmt.Fprintf(&b, "%s  (%s; every change, Ctrl-C to stop)\n", c.Now().UTC().Format(time.RFC3339), why)
	if v != nil {
		b.WriteString(v.render(c.base.String()))
	}
	if err != nil {
		fmt.Fprintf(&b, "%v\n", err)
	}
	if !c.IsTerminal {
		b.WriteString("\n")
	}
	fmt.Fprint(c.Stdout, b.String())
}

// maxEventLine bounds one line of the event stream.
const maxEventLine = 1 << 20

// follow reads GET /events until ctx or the stream ends. It sends each
// event's name to events, dropped when a redraw is already due. It closes
// connected once the daemon has answered 200.
func (c *client) follow(ctx context.Context, connected chan<- struct{}, events chan<- string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	// No client timeout: the stream is open for good. The transport's own
	// timeouts still bound connecting.
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		return unreachable{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &apiError{http.MethodGet, c.base.String() + "/events", resp.StatusCode, ""}
	}
	close(connected)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4096), maxEventLine)
	kind := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case line == "" && kind != "": // the end of one event
			select {
			case events <- kind:
			default:
			}
			kind = ""
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("the daemon closed the stream")
}
