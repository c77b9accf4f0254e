package kube

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fieldsOf is the field of each *FieldError in err, a joined error or one.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var fields []string
	for _, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is no *FieldError", e)
		}
		fields = append(fields, fe.Field)
	}
	return fields
}

// Validate names every wrong field at once, each once.
func TestValidateNamesEveryField(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := Config{LeaderLabel: "electd.io/leader", LeaseName: "web", Identity: "web-0", PodName: "web-0",
		Namespace: "default", Server: "https://10.0.0.1:443", TokenFile: token, Transport: http.DefaultTransport}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("a mirror that is off: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"label", func(c *Config) { c.LeaderLabel = "-bad" }, []string{"LeaderLabel"}},
		{"every field", func(c *Config) {
			c.LeaderLabel, c.PodName, c.LeaseName, c.Namespace = "a/b/c", "", "Web", "Default"
			c.RecheckInterval, c.TokenFile = 10, filepath.Join(t.TempDir(), "none")
		}, []string{"LeaderLabel", "PodName", "LeaseName", "Namespace", "RecheckInterval", "TokenFile"}},
		{"no server: the label is named once", func(c *Config) { c.LeaderLabel, c.Server = "-bad", "" },
			[]string{"LeaderLabel"}},
		{"no server, no label: the Lease is named", func(c *Config) { c.LeaderLabel, c.Server = "", "" },
			[]string{"LeaseName"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if got := fieldsOf(t, c.Validate()); !slices.Equal(got, tc.want) {
				t.Errorf("fields %q, want %q", got, tc.want)
			}
		})
	}
}

// Without a label or a Lease the Labeler is off: it mirrors nothing and
// Run and Stop return at once.
func TestOffLabeler(t *testing.T) {
	l, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := l.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := l.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if st := l.Status(); st != nil {
		t.Errorf("Status %+v, want none", st)
	}
}
