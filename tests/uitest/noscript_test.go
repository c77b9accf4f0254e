package uitest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// loadStatic loads url in a tab without scripts until ok accepts what it
// shows, failing t with the last reading when timeout passes first. Each
// try is a new load: without the script, only the server's drawing of
// the moment changes what the page shows.
func loadStatic(t *testing.T, ctx context.Context, url string, timeout time.Duration, what string, ok func(page) string) page {
	t.Helper()
	load := func() (page, error) {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := chromedp.Do(c, chromedp.Navigate(url)); err != nil {
			return page{}, fmt.Errorf("loading %s: %w", url, err)
		}
		return readPage(c)
	}
	static := func(p page) string {
		if p.Conn != "static" {
			return fmt.Sprintf("the connection line says %q: a script ran", p.Conn)
		}
		return ok(p)
	}
	return pollPage(t, timeout, 100*time.Millisecond, "the page without JavaScript to show "+what, load, static)
}

// staticFollower: web-2's page, without JavaScript, while web-1 leads.
func staticFollower(t *testing.T, ctx context.Context, url string, token1 int64) {
	t.Helper()
	p := loadStatic(t, ctx, url, 20*time.Second, "web-1 leading and the queue", func(p page) string {
		switch {
		case p.Leader != "web-1" || p.Token != strconv.FormatInt(token1, 10):
			return "leader web-1 with its token"
		case !slices.Equal(p.queueIDs(), []string{"web-1", "web-2", "web-3"}):
			return "the queue web-1, web-2, web-3"
		}
		return ""
	})
	if p.Role != "follower" || p.SelfID != "web-2" || p.Reason != "following web-1" || p.LeaseText != "none (not leading)" {
		t.Errorf("without JavaScript, self = %q %q %q %q; want web-2, follower, following web-1, no lease", p.SelfID, p.Role, p.Reason, p.LeaseText)
	}
	if p.Queue[0][3] != "leader" || p.Queue[1][3] != "follower (this electd)" {
		t.Errorf("without JavaScript, roles = %q, %q; want leader, follower (this electd)", p.Queue[0][3], p.Queue[1][3])
	}
	if p.Title != "electd: web-1 leads" || len(p.History) == 0 {
		t.Errorf("without JavaScript, title %q and %d history rows; want electd: web-1 leads and a history", p.Title, len(p.History))
	}
}

// staticHostile: web-2's page, without JavaScript, once the hostile
// participant leads: its id and address drawn by the server, as text.
func staticHostile(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	p := loadStatic(t, ctx, url, 20*time.Second, "the hostile participant leading", func(p page) string {
		switch {
		case p.Leader != hostileID || p.Advertise != hostileAdvertise:
			return "the hostile id and advertise as the leader's, as text"
		case !slices.Equal(p.queueIDs(), []string{hostileID, "web-2"}):
			return "the queue hostile, web-2"
		case p.Role != "follower":
			return "web-2 following"
		}
		return ""
	})
	checkHostile(t, p)
	if want := "electd: " + hostileID + " leads"; p.Title != want {
		t.Errorf("without JavaScript, title = %q, want %q", p.Title, want)
	}
}
