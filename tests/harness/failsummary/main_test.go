package main

import (
	"strings"
	"testing"
)

// A failed subtest's lines come again at the end; its parent's teardown
// noise, passing tests and the package's own verdict do not.
func TestPrintRepeatsOwnFailures(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"x","Test":"TestA/bad","Output":"    x_test.go:5: before\n"}`,
		`{"Action":"output","Package":"x","Test":"TestA/bad","Output":"    x_test.go:5: the reason\n"}`,
		`{"Action":"fail","Package":"x","Test":"TestA/bad"}`,
		`# not json`,
		`{"Action":"output","Package":"x","Test":"TestA","Output":"    x_test.go:6: noise\n"}`,
		`{"Action":"fail","Package":"x","Test":"TestA"}`,
		`{"Action":"output","Package":"x","Test":"TestB","Output":"    x_test.go:8: b only\n"}`,
		`{"Action":"pass","Package":"x","Test":"TestB"}`,
		`{"Action":"output","Package":"x","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"x"}`,
		`{"Action":"output","Package":"y","Output":"panic: boom\n"}`,
		`{"Action":"fail","Package":"y"}`,
	}, "\n")
	s := newSummary()
	var stream, end strings.Builder
	if err := s.read(strings.NewReader(in), &stream); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the reason\n", "# not json\n", "noise\n", "b only\n", "panic: boom\n"} {
		if !strings.Contains(stream.String(), want) {
			t.Errorf("stream lacks %q:\n%s", want, stream.String())
		}
	}
	s.print(&end, 1)
	want := "\n=== failsummary: 2 failed on their own account; each one's last 1 lines again\n" +
		"--- x TestA/bad\n    x_test.go:5: the reason\n" +
		"--- y\npanic: boom\n"
	if end.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", end.String(), want)
	}
}

// Nothing failed: nothing is added.
func TestPrintQuietWhenAllPass(t *testing.T) {
	s := newSummary()
	var stream, end strings.Builder
	s.read(strings.NewReader(`{"Action":"pass","Package":"x","Test":"TestB"}`), &stream)
	s.print(&end, 10)
	if end.Len() != 0 {
		t.Errorf("summary of a passing run: %q", end.String())
	}
}
