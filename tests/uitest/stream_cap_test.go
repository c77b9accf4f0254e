package uitest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// TestStatusPageStreamCap: the page's own /events stream counts against
// http.max_streams (docs/design/http-contract.md, "HTTP API"). With the cap at 1 and the
// slot taken, the page says that live updates are refused and still shows
// the election from /leader; it takes the slot once it is free; and a
// hidden page gives the slot back until it is shown again.
func TestStatusPageStreamCap(t *testing.T) {
	tab := Browser(t)
	zk := zktest.Start(t, zktest.Options{})
	solo := startElectd(t, zk, "/services/cap", "solo", "solo", "10.0.0.9:8080", "--http.max_streams=1")
	base := "http://" + solo.Addr

	// Another client holds the only stream.
	hold, err := openStream(t, base)
	if err != nil || hold.status != http.StatusOK {
		t.Fatalf("GET /events: %+v %v; want 200", hold, err)
	}
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, tab, 20*time.Second, "the page to say live updates are refused, and show the leader from /leader", func(p page) string {
		switch {
		case p.Conn != "down":
			return "the connection line saying /events was refused"
		case p.Leader != "solo" || len(p.Queue) != 1 || p.Role != "leader":
			return "solo leading, from /leader, /participants and /healthz/leader"
		}
		return ""
	})
	if n := refusedStreams(t, solo); n < 1 {
		t.Errorf("electd_http_requests_refused_total{reason=\"streams\"} = %v, want the page's refusal counted", n)
	}

	// The slot is freed: the page's next try takes it.
	hold.close()
	waitPage(t, tab, 20*time.Second, "the page to take the free slot", func(p page) string {
		if p.Conn != "live" {
			return "the connection line saying live"
		}
		return ""
	})
	if other, err := openStream(t, base); err != nil || other.status != http.StatusServiceUnavailable {
		t.Errorf("GET /events while the page streams: %d %v; want 503 (the page holds the only slot)", other.status, err)
	} else {
		other.close()
	}

	// Hidden, the page gives its slot back; shown again, it takes it.
	setHidden(t, tab, true)
	waitPage(t, tab, 10*time.Second, "the hidden page to pause", func(p page) string {
		if p.Conn != "paused" {
			return "the connection line saying paused"
		}
		return ""
	})
	if err := wait.Until(context.Background(), 20*time.Second, 50*time.Millisecond, func() error {
		s, err := openStream(t, base)
		if err != nil {
			return err
		}
		s.close()
		if s.status != http.StatusOK {
			return fmt.Errorf("%d", s.status)
		}
		return nil
	}); err != nil {
		t.Fatalf("GET /events never answered 200 after the page was hidden (last: %v)", err)
	}
	setHidden(t, tab, false)
	waitPage(t, tab, 20*time.Second, "the shown page to stream again", func(p page) string {
		if p.Conn != "live" || p.Leader != "solo" {
			return "the connection line saying live, solo leading"
		}
		return ""
	})
	if ex := tab.Exceptions(); len(ex) > 0 {
		t.Errorf("the page threw: %q", ex)
	}
}

// stream is a GET /events of the test's own.
type stream struct {
	status int
	close  func()
}

// openStream sends GET /events and, on 200, reads up to the first event, so
// that the server holds the slot when it returns.
func openStream(t *testing.T, base string) (stream, error) {
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	if err != nil {
		cancel()
		return stream{}, err
	}
	resp, err := (&http.Client{Timeout: 0}).Do(req)
	if err != nil {
		cancel()
		return stream{}, err
	}
	s := stream{status: resp.StatusCode, close: func() { cancel(); resp.Body.Close() }}
	if resp.StatusCode == http.StatusOK {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
		}
	}
	return s, nil
}

// setHidden makes the page's document report hidden (or visible) and fire
// visibilitychange, as a browser does when its tab goes to the background.
func setHidden(t *testing.T, tab *Tab, hidden bool) {
	t.Helper()
	state := "visible"
	if hidden {
		state = "hidden"
	}
	js := `Object.defineProperty(document, "hidden", {configurable: true, get: () => ` + strconv.FormatBool(hidden) + `});
Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "` + state + `"});
document.dispatchEvent(new Event("visibilitychange"));`
	if _, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
		t.Fatal(err)
	}
}

// refusedStreams reads electd_http_requests_refused_total{reason="streams"}.
func refusedStreams(t *testing.T, p *electdtest.Proc) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	mfs, err := p.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mfs["electd_http_requests_refused_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == "streams" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
