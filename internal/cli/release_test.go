package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handOver makes the fake release to next: web-1 leads among ids, the
// release answers 202 and then next leads.
func handOver(f *fakeDaemon, ids []string, next int) func(*http.Request) (int, string) {
	return func(*http.Request) (int, string) {
		go f.set(ids, next, 0) // after the answer, as the daemon hands over
		return http.StatusAccepted, `{"released":true,"id":"web-1"}`
	}
}

func TestReleaseWithTheEnvironmentToken(t *testing.T) {
	f, srv := newFakeDaemon(t)
	ids := []string{"web-1", "web-2", "web-3"}
	f.set(ids, 0, 0)
	f.release = handOver(f, ids, 1)
	status, stdout, stderr := runCLI(t, context.Background(), map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "s3cret"},
		"release", "--addr", srv.URL)
	if status != exitOK {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	if want := "web-1 released leadership (fencing token 7)\nweb-2 leads now (fencing token 10)\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	r := f.releases[0]
	if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
	if r.URL.RawQuery != "" {
		t.Errorf("query %q, want none without --to", r.URL.RawQuery)
	}
}

func TestReleaseTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f, srv := newFakeDaemon(t)
	ids := []string{"web-1", "web-2"}
	f.set(ids, 0, 0)
	f.release = handOver(f, ids, 1)
	// A Secret mounted as a file, or `echo token > file`: one trailing
	// newline is not part of the token. The file beats the environment.
	env := map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "from-env"}
	status, _, stderr := runCLI(t, context.Background(), env, "release", "--addr", srv.URL, "--token-file", write("token", "from file\n"))
	if status != exitOK {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	if got := f.releases[0].Header.Get("Authorization"); got != "Bearer from file" {
		t.Errorf("Authorization %q, want the file's token without its newline", got)
	}

	for name, c := range map[string]struct {
		file string
		env  map[string]string
	}{
		"no token":     {"", nil},
		"empty file":   {write("empty", "\n"), nil},
		"missing file": {filepath.Join(dir, "nope"), nil},
		"huge file":    {write("huge", strings.Repeat("x", maxTokenFile+1)), nil},
	} {
		args := []string{"release", "--addr", srv.URL}
		if c.file != "" {
			args = append(args, "--token-file", c.file)
		}
		status, _, stderr := runCLI(t, context.Background(), c.env, args...)
		if status != exitUsage || !strings.Contains(stderr, "token") {
			t.Errorf("%s: status %d, stderr %q; want 2 and a message about the token", name, status, stderr)
		}
	}
	if len(f.releases) != 1 {
		t.Errorf("%d releases sent; the refused invocations must send none", len(f.releases))
	}
}

// The daemon's refusals reach the user as the daemon worded them.
func TestReleaseRefusedPrintsTheDaemonsError(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 1)
	for code, body := range map[int]string{
		http.StatusConflict:     `{"error":"not the leader"}`,
		http.StatusUnauthorized: `{"error":"invalid bearer token"}`,
		http.StatusForbidden:    `{"error":"mutating endpoints are disabled: set http.admin_token"}`,
	} {
		f.release = func(*http.Request) (int, string) { return code, body }
		status, stdout, stderr := runCLI(t, context.Background(), map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t"}, "release", "--addr", srv.URL)
		if status != exitFailed || stdout != "" || !strings.Contains(stderr, http.StatusText(code)+": "+body) {
			t.Errorf("%d: status %d, stdout %q, stderr %q; want 1 and the daemon's JSON", code, status, stdout, stderr)
		}
	}
}

func TestReleaseTo(t *testing.T) {
	f, srv := newFakeDaemon(t)
	ids := []string{"web-1", "web-2", "web-3"}
	env := map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t"}

	// Handed to the one asked for: 0.
	f.set(ids, 0, 0)
	f.release = handOver(f, ids, 2)
	status, stdout, stderr := runCLI(t, context.Background(), env, "release", "--addr", srv.URL, "--to", "web-3")
	if status != exitOK || !strings.Contains(stdout, "web-3 leads now") {
		t.Errorf("status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if q := f.releases[0].URL.Query(); q.Get("to") != "web-3" || len(q) != 1 {
		t.Errorf("query %v, want to=web-3", q)
	}

	// A daemon that ignored ?to= and released to the next in line: 1.
	f.set(ids, 0, 0)
	f.release = handOver(f, ids, 1)
	status, _, stderr = runCLI(t, context.Background(), env, "release", "--addr", srv.URL, "--to", "web-3")
	if status != exitFailed || !strings.Contains(stderr, "web-2 leads, not web-3") {
		t.Errorf("status %d, stderr %q; want 1 and who leads instead", status, stderr)
	}

	// A daemon that cannot hand over says why: printed, 1.
	f.set(ids, 0, 0)
	f.release = func(*http.Request) (int, string) {
		return http.StatusConflict, `{"error":"web-9 is not a participant"}`
	}
	status, _, stderr = runCLI(t, context.Background(), env, "release", "--addr", srv.URL, "--to", "web-9")
	if status != exitFailed || !strings.Contains(stderr, `409 Conflict: {"error":"web-9 is not a participant"}`) {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
	if q := f.releases[2].URL.RawQuery; q != "to=web-9" {
		t.Errorf("query %q", q)
	}
}

func TestReleaseWithoutANewLeaderExits1(t *testing.T) {
	f, srv := newFakeDaemon(t)
	f.set([]string{"web-1", "web-2"}, 0, 0)
	f.release = func(*http.Request) (int, string) { return http.StatusAccepted, `{"released":true,"id":"web-1"}` }
	status, stdout, stderr := runCLI(t, context.Background(), map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t"},
		"release", "--addr", srv.URL, "--wait", "300ms")
	if status != exitFailed || !strings.Contains(stdout, "web-1 released leadership") || !strings.Contains(stderr, "no new leader within 300ms") {
		t.Errorf("status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
}

func TestReleaseUnreachableExits3(t *testing.T) {
	_, srv := newFakeDaemon(t)
	srv.Close()
	status, _, _ := runCLI(t, context.Background(), map[string]string{"ELECTD_HTTP_ADMIN_TOKEN": "t"}, "release", "--addr", srv.URL)
	if status != exitUnreachable {
		t.Errorf("status %d, want 3", status)
	}
}
