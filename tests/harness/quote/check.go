package quote

import (
	"strings"
	"testing"
)

// Kept names a kept report of one kind and the regions the docs quote it in.
type Kept[R any] struct {
	Root, Kind, Path string                             // Path is relative to Root
	Find             func(root string) (string, error)  // finds the report when Path is empty
	Read             func(root, path string) (R, error) // parses the report
	Files            []string                           // every file that quotes this kind
	Regions          []Region[R]
	Fix              string // the command that rewrites drifted regions
}

// Check fails t while a region differs from the report, or a region of
// the kind in Files is one Regions does not write. With update it
// rewrites the regions first.
func (k Kept[R]) Check(t testing.TB, update bool) {
	t.Helper()
	if k.Path == "" {
		var err error
		if k.Path, err = k.Find(k.Root); err != nil {
			t.Fatal(err)
		}
	}
	r, err := k.Read(k.Root, k.Path)
	if err != nil {
		t.Fatal(err)
	}
	drift, err := Rewrite(k.Root, k.Kind, r, k.Regions, update)
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) > 0 && !update {
		t.Errorf("these regions do not say what %s does: %s; %s rewrites them", k.Path, strings.Join(drift, ", "), k.Fix)
	}
	unknown, err := Unknown(k.Root, k.Kind, k.Files, k.Regions)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unknown {
		t.Errorf("%s is not one of the regions written from the report", u)
	}
}
