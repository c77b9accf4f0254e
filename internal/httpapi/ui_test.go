package httpapi

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/internal/election/electiontest"
)

func TestStatusPageFiles(t *testing.T) {
	tests := []struct {
		name, method, target string
		code                 int
		ctype                string
		contains             string
		allow                string
	}{
		{name: "page", method: "GET", target: "/", code: 200, ctype: "text/html; charset=utf-8",
			contains: `<script src="/ui/app.js" defer></script>`},
		{name: "script", method: "GET", target: "/ui/app.js", code: 200, ctype: "text/javascript; charset=utf-8",
			contains: `new EventSource("/events")`},
		{name: "style", method: "GET", target: "/ui/app.css", code: 200, ctype: "text/css; charset=utf-8",
			contains: "prefers-color-scheme"},
		{name: "HEAD page", method: "HEAD", target: "/", code: 200, ctype: "text/html; charset=utf-8"},
		{name: "POST page", method: "POST", target: "/", code: 405, ctype: "application/json", allow: "GET, HEAD"},
		{name: "DELETE script", method: "DELETE", target: "/ui/app.js", code: 405, ctype: "application/json", allow: "GET, HEAD"},
		{name: "no other files", method: "GET", target: "/ui/index.html", code: 404, ctype: "application/json"},
		{name: "no directory listing", method: "GET", target: "/ui/", code: 404, ctype: "application/json"},
		{name: "no traversal", method: "GET", target: "/ui/../router.go", code: 404, ctype: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestRouter(electiontest.New(followerSt), Options{})
			resp, body := serve(t, h, newRequest(tt.method, tt.target, ""))
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Fatalf("status = %d, want %d (%s)", got, want, body)
			}
			if got, want := resp.Header.Get("Content-Type"), tt.ctype; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Allow"), tt.allow; got != want {
				t.Errorf("Allow = %q, want %q", got, want)
			}
			if tt.contains != "" {
				mustContain(t, body, tt.contains)
			}
			if tt.method == "HEAD" && body != "" {
				t.Errorf("HEAD answered a body of %d bytes", len(body))
			}
			if tt.code != 200 {
				return
			}
			for k, want := range map[string]string{
				"Content-Security-Policy": pageCSP,
				"X-Content-Type-Options":  "nosniff",
				"X-Frame-Options":         "DENY",
				"Referrer-Policy":         "no-referrer",
				"Cache-Control":           cacheControl(tt.target),
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// cacheControl: the page says who leads now and is never stored; its
// files are asked again each time and answered 304 while they match.
func cacheControl(target string) string {
	if target == "/" {
		return "no-store"
	}
	return "no-cache"
}

// TestStatusPageConditional: a browser that has the page gets 304 until the
// file changes (its ETag is the content's hash).
func TestStatusPageConditional(t *testing.T) {
	h := newTestRouter(electiontest.New(followerSt), Options{})
	resp, _ := doGet(t, h, "/ui/app.js")
	etag := resp.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
		t.Fatalf("ETag = %q, want a quoted hash", etag)
	}
	tests := []struct {
		name, ifNoneMatch string
		code              int
	}{
		{"same", etag, http.StatusNotModified},
		{"other", `"0000000000000000"`, http.StatusOK},
		{"any", "*", http.StatusNotModified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doGet(t, h, "/ui/app.js", "If-None-Match", tt.ifNoneMatch)
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if tt.code == http.StatusNotModified && body != "" {
				t.Errorf("304 with a body of %d bytes", len(body))
			}
		})
	}
}

// TestStatusPageCSP checks what the policy must forbid and allow: the page
// works only if its script, style and API calls are its own, and nothing
// injected could run inline, load from elsewhere or send data away.
func TestStatusPageCSP(t *testing.T) {
	directives := map[string]string{}
	for d := range strings.SplitSeq(pageCSP, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	want := map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"style-src":       "'self'",
		"connect-src":     "'self'",
		"base-uri":        "'none'",
		"form-action":     "'none'",
		"frame-ancestors": "'none'",
	}
	for k, v := range want {
		if directives[k] != v {
			t.Errorf("%s = %q, want %q", k, directives[k], v)
		}
	}
	for k := range directives {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected directive %q", k)
		}
	}
	if strings.Contains(pageCSP, "unsafe") {
		t.Errorf("the policy allows something unsafe: %s", pageCSP)
	}
}

// TestStatusPageMarkup: no inline script, style or event handler in the
// page (the policy would block them, so the page would break), and the
// script puts values into the page as text only. The browser test
// (tests/uitest) shows a hostile id rendered as text; this catches an
// HTML sink in the script before anyone runs a browser.
func TestStatusPageMarkup(t *testing.T) {
	page := asString(t, "ui/index.html")
	script := asString(t, "ui/app.js")

	for _, tag := range regexp.MustCompile(`(?is)<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(tag, `src="/ui/`) {
			t.Errorf("inline script: %s", tag)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<style`),
		regexp.MustCompile(`(?i)\sstyle=`),
		regexp.MustCompile(`(?i)\son[a-z]+=`),
		regexp.MustCompile(`(?i)(src|href)="(https?:)?//`),
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("index.html has %q", m)
		}
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
		"new Function", "setAttribute(\"on", ".src =", ".href ="} {
		if strings.Contains(script, sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	if !strings.Contains(script, "textContent") {
		t.Error("app.js never uses textContent")
	}

	// Every element the script looks up exists in the page.
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		ids[m[1]] = true
	}
	var used []string
	for _, m := range regexp.MustCompile(`(?:\$|setText)\("([a-z-]+)"`).FindAllStringSubmatch(script, -1) {
		if !slices.Contains(used, m[1]) {
			used = append(used, m[1])
		}
	}
	if len(used) < 10 {
		t.Fatalf("found only %d element ids in app.js: %v", len(used), used)
	}
	for _, id := range used {
		if !ids[id] {
			t.Errorf("app.js uses #%s, which index.html lacks", id)
		}
	}
}

func asString(t *testing.T, name string) string {
	t.Helper()
	b, err := uiFiles.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
