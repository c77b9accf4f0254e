package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/electd/electd/tools/dist/image"
)

// No Docker engine runs on this project's machines, so the image is checked
// as text: what the release promises of it (pinned bases, OCI labels, a
// stamped version) must be in the Dockerfile and the Makefile must pass it.

func readRoot(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Dockerfile is what the recipe renders (the recipe tests/harness/nodetest
// builds the node's image from), and -dockerfile writes exactly that.
func TestDockerfileIsTheRecipe(t *testing.T) {
	if got, want := readRoot(t, "Dockerfile"), image.Electd.Dockerfile(); got != want {
		t.Errorf("Dockerfile is not what tools/dist/image renders: run go generate ./tools/dist\n--- want\n%s", want)
	}
	out := filepath.Join(t.TempDir(), "Dockerfile")
	var stderr strings.Builder
	if code := run([]string{"-dockerfile", out}, io.Discard, &stderr); code != 0 {
		t.Fatalf("dist -dockerfile: exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != image.Electd.Dockerfile() {
		t.Errorf("dist -dockerfile wrote %q (%v)", b, err)
	}
}

var pinnedRE = regexp.MustCompile(`^[a-z0-9./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$`)

func TestDockerfilePinsBaseImagesByDigest(t *testing.T) {
	df := readRoot(t, "Dockerfile")
	args := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG (\w+)=(\S*)$`).FindAllStringSubmatch(df, -1) {
		args[m[1]] = m[2]
	}
	froms := regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) != 2 {
		t.Fatalf("%d FROM lines, want 2 (build and runtime)", len(froms))
	}
	for _, m := range froms {
		ref := m[1]
		if name, ok := strings.CutPrefix(ref, "${"); ok {
			ref = args[strings.TrimSuffix(name, "}")]
		}
		if !pinnedRE.MatchString(ref) {
			t.Errorf("FROM %s (%s) is not pinned by a sha256 digest", m[1], ref)
		}
	}
}

func TestDockerfileLabelsAndStamping(t *testing.T) {
	df := readRoot(t, "Dockerfile")
	for _, l := range []string{"title", "description", "version", "revision", "created", "source", "licenses"} {
		if !strings.Contains(df, "org.opencontainers.image."+l+"=") {
			t.Errorf("Dockerfile sets no org.opencontainers.image.%s label", l)
		}
	}
	for _, s := range []string{
		`org.opencontainers.image.version="${VERSION}"`, `org.opencontainers.image.revision="${COMMIT}"`,
		`org.opencontainers.image.created="${CREATED}"`, `org.opencontainers.image.licenses="Apache-2.0"`,
		`go run ./tools/dist -version "${VERSION}" -commit "${COMMIT}"`,
	} {
		if !strings.Contains(df, s) {
			t.Errorf("Dockerfile lacks %s", s)
		}
	}

	// make docker passes every build argument the labels and the stamp use:
	// the context has no .git to find them in.
	mk := readRoot(t, "Makefile")
	recipe := regexp.MustCompile(`(?m)^docker:.*\n\t(.*)$`).FindStringSubmatch(mk)
	if recipe == nil {
		t.Fatal("Makefile has no docker target")
	}
	for _, arg := range []string{"VERSION", "COMMIT", "CREATED"} {
		if !strings.Contains(recipe[1], "--build-arg "+arg+"=$("+arg+")") {
			t.Errorf("make docker does not pass --build-arg %s: %s", arg, recipe[1])
		}
	}
}

// The build context must keep what tools/dist reads.
func TestDockerignoreKeepsWhatDistNeeds(t *testing.T) {
	var patterns []string
	for _, l := range strings.Split(readRoot(t, ".dockerignore"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimSuffix(l, "/"))
		}
	}
	for _, need := range []string{"LICENSE", "go.mod", "go.sum", "cmd", "internal", "third_party", "tools", "tools/dist"} {
		if slices.Contains(patterns, need) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", need)
		}
	}
	if !slices.Contains(patterns, ".git") {
		t.Error(".dockerignore lets .git into the context")
	}
}
