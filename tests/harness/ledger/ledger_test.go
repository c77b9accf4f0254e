package ledger

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/electd/electd/tests/harness/wait"
)

func TestMain(m *testing.M) {
	MainIfApp()
	os.Exit(m.Run())
}

// Both applications, reached directly: a POST's arrival is in the ledger
// before its body is read (the application sleeps in between), a chunked
// body's trailers are in its done line, and every answer carries X-App and
// Electd-Leak. Without these the data-plane tests could not fail.
func TestApplications(t *testing.T) {
	if testing.Short() {
		t.Skip("runs application processes")
	}
	for _, lang := range []string{Go, Python} {
		t.Run(lang, func(t *testing.T) {
			a := Start(t, lang, "a-"+lang, t.TempDir())
			c := &http.Client{Timeout: 10 * time.Second}
			body, pw := io.Pipe()
			req, _ := http.NewRequest(http.MethodPost, "http://"+a.Addr+"/w?sleep=300", body)
			req.Trailer = http.Header{"X-Sum": nil}
			done := make(chan Request, 1)
			go func() { done <- Do(c, "direct", "id-1", req) }()
			wait.For(t, 10*time.Second, "the arrival in the ledger", func() bool {
				es, err := a.Entries()
				return err == nil && len(es) == 1 && es[0].Ev == Arrive
			})
			io.WriteString(pw, "abc")
			req.Trailer.Set("X-Sum", "42")
			pw.Close()
			r := <-done
			if r.Err != nil || r.Code != 200 || r.Header.Get("X-App") != a.Name || r.Header.Get("Electd-Leak") == "" {
				t.Fatalf("answer: %v %v", r, r.Header)
			}
			es, err := a.Entries()
			if err != nil || len(es) != 2 {
				t.Fatalf("ledger: %v %v", es, err)
			}
			if d := es[1]; d.Ev != Done || d.ID != "id-1" || d.BodySize != 3 || first(d.Trailer, "x-sum") != "42" {
				t.Errorf("done line: %+v", d)
			}
			if got := Leaks([]Request{r}); len(got) != 1 {
				t.Errorf("Leaks found %v in an answer with Electd-Leak", got)
			}
		})
	}
}

// The Go application's gRPC: a unary call, and the echo stream whose
// status comes in the trailers.
func TestGoApplicationGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs application processes")
	}
	a := Start(t, Go, "g", t.TempDir())
	cc, err := grpc.NewClient(a.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check: %v %v", res, err)
	}
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, EchoMethod)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b"} {
		if err := st.SendMsg(wrapperspb.Bytes([]byte(s))); err != nil {
			t.Fatal(err)
		}
		var m wrapperspb.BytesValue
		if err := st.RecvMsg(&m); err != nil || string(m.Value) != s {
			t.Fatalf("echo of %s: %q %v", s, m.Value, err)
		}
	}
	st.CloseSend()
	err = st.RecvMsg(new(wrapperspb.BytesValue))
	if s := status.Convert(err); s.Code() != EchoEnd || s.Message() != "echoed 2" || strings.Join(st.Trailer()["x-app"], "") != "g" {
		t.Errorf("end of the echo: %v, trailer %v", err, st.Trailer())
	}
	es, _ := a.Entries()
	if len(es) != 2 || es[0].Method != "GRPC" || es[1].Path != EchoMethod {
		t.Errorf("ledger: %v", es)
	}
}

// The checks find what they are for.
func TestChecks(t *testing.T) {
	es := []Entry{
		{Ev: Arrive, App: "p0", ID: "a", Token: "5", Leader: "p0", At: 1},
		{Ev: Arrive, App: "p1", ID: "a", Token: "7", Leader: "p1", At: 2},
		{Ev: Arrive, App: "p0", ID: "b", Token: "5", Leader: "p0", At: 3},
		{Ev: Done, App: "p1", ID: "c", Token: "7", Leader: "p1", At: 4},
	}
	if got := Twice(es, nil); len(got) != 1 || !strings.HasPrefix(got[0], " a ran 2 times") {
		t.Errorf("Twice: %q", got)
	}
	if got := Twice(es, func(id string) bool { return id != "a" }); len(got) != 0 {
		t.Errorf("Twice, a left out: %q", got)
	}
	if got := Unfenced(es); len(got) != 1 || !strings.Contains(got[0], "p0 got token 5 after token 7") {
		t.Errorf("Unfenced: %q", got)
	}
	ok := Request{Code: 200}
	late := Request{Code: 503, Header: http.Header{"Retry-After": {"1"}}, Start: time.Unix(0, 0), End: time.Unix(3, 0)}
	if !Clean(ok) || !Clean(late) || Clean(Request{Code: 503, Header: http.Header{}}) || Clean(Request{Code: 502, Header: http.Header{}}) {
		t.Error("Clean")
	}
	if got := Late([]Request{ok, late}, 2*time.Second); len(got) != 1 {
		t.Errorf("Late: %v", got)
	}
}

// A last line without its newline is waited for: a live application may be
// in the middle of its one write. One never finished, or a cut line before
// others, is an error.
func TestReadLineBeingWritten(t *testing.T) {
	dir := t.TempDir()
	whole := `{"ev":"arrive","app":"p0","id":"a","at":1}` + "\n"
	p := dir + "/live"
	if err := os.WriteFile(p, []byte(whole+`{"ev":"arrive","app":"p0",`), 0o644); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString(`"id":"b","at":2}` + "\n")
			f.Close()
		}
		finished <- err
	}()
	es, err := Read(p)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	if err != nil || len(es) != 2 || es[1].ID != "b" {
		t.Errorf("a line finished while read: %v, %v", es, err)
	}
	for name, text := range map[string]string{
		"never finished":    whole + `{"ev":"arrive",`,
		"cut before others": `{"ev":"arr` + "\n" + whole,
	} {
		q := dir + "/" + strings.ReplaceAll(name, " ", "-")
		if err := os.WriteFile(q, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if es, err := Read(q); err == nil {
			t.Errorf("%s: no error, %v", name, es)
		}
	}
}
