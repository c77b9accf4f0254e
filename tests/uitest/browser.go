// Package uitest drives electd's status page (GET /, docs/design/http-contract.md "HTTP
// API") in a real headless Chromium, Debian's chromium package, through the
// DevTools protocol (chromedp), for the tests that look at the page as a
// person does.
//
// Browser is the gate, as zktest.Require is for ZooKeeper: in -short mode it
// skips the test; otherwise a missing browser fails it, naming the package
// that installs it. It is never a skip in a full run.
package uitest

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Viewport is the browser window's size: wide enough for the page's two
// columns, tall enough for the screenshot to show the whole page.
const (
	ViewportWidth  = 1280
	ViewportHeight = 1100
)

// chromium is Debian's Chromium: chromium in PATH, else the package's own
// path. In -short mode it skips t; without a browser it fails t.
func chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("uitest: needs a real Chromium; skipped in -short mode")
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("uitest: no chromium in PATH or at /usr/bin/chromium: " +
		"apt-get install -y chromium (scripts/install-deps.sh installs it)")
	return ""
}

// Tab is a browser tab and what the test saw happen in it.
type Tab struct {
	// Ctx runs chromedp actions in the tab.
	Ctx context.Context

	mu       sync.Mutex
	requests []Request
	console  []chromedp.ConsoleMessage
}

// Request is one request the page sent.
type Request struct {
	Method, URL string
}

// Browser starts a headless Chromium with a fresh profile and opens one tab,
// recording every request the tab sends and every console message; both
// end with the test. In -short mode it skips t; without a browser it fails t.
func Browser(t testing.TB) *Tab {
	t.Helper()
	path := chromium(t)
	// What a test machine without a network or a display needs, as root:
	// no sandbox (it needs user namespaces), no GPU, and no connections of
	// Chromium's own (updates, sync, field trials), which a closed network
	// refuses many at a time.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(ViewportWidth, ViewportHeight),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // stops Chromium and waits for it, before TempDir's removal
	})
	tab := &Tab{Ctx: ctx}
	// The first call starts the browser; Listen needs the target it opens.
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			tab.mu.Lock()
			tab.requests = append(tab.requests, Request{Method: e.Request.Method, URL: e.Request.URL})
			tab.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("uitest: starting %s: %v", path, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return // the tab or the test ended
			}
			tab.mu.Lock()
			tab.console = append(tab.console, m)
			tab.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range tab.Console() {
				t.Logf("browser console: %s (%s:%d)", m, m.URL, m.Line)
			}
		}
	})
	return tab
}

// NoScriptTab opens another tab of b's browser in which no page script
// runs (Emulation.setScriptExecutionDisabled): what a browser without
// JavaScript, a text browser or curl gets. The protocol's own evaluations
// (readPage) still run in it. It closes with the test.
func (b *Tab) NoScriptTab(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.Ctx)
	t.Cleanup(cancel)
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled,
		emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("uitest: disabling scripts in a new tab: %v", err)
	}
	return ctx
}

// Requests returns the requests the tab sent so far, in order.
func (b *Tab) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.requests...)
}

// Console returns the console messages so far, in order.
func (b *Tab) Console() []chromedp.ConsoleMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), b.console...)
}

// Exceptions returns the uncaught exceptions among the console messages.
func (b *Tab) Exceptions() []string {
	var out []string
	for _, m := range b.Console() {
		if m.IsException() {
			out = append(out, fmt.Sprintf("%s (%s:%d)", m.Text, m.URL, m.Line))
		}
	}
	return out
}
