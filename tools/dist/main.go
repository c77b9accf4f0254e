// Command dist builds electd's release files (`make dist`): a static binary
// per platform, stamped with the version and commit, the project's LICENSE,
// the licences of everything compiled into the binaries
// (THIRD_PARTY_LICENSES: the BSD and MIT licences of some dependencies ask
// for their notice in every binary distribution), and SHA256SUMS over all of
// them, in the format `sha256sum -c` reads.
//
//	go run ./tools/dist -version v0.1.0 -commit 0123abcd -out dist
//
// It runs from the repository root and refuses an output directory that
// holds files already, so a release never mixes two builds. With
// -dockerfile it writes the Dockerfile rendered from the image's recipe
// (tools/dist/image) instead, and builds nothing.
package main

//go:generate go run . -dockerfile ../../Dockerfile

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/electd/electd/tools/dist/image"
)

// platforms are the release targets.
const platforms = "linux/amd64,linux/arm64,darwin/arm64"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r release
	var plats string
	fs.StringVar(&r.version, "version", "", "version stamped into the binaries (main.version) and their names")
	fs.StringVar(&r.commit, "commit", "", "commit stamped into the binaries (main.commit)")
	fs.StringVar(&r.out, "out", "dist", "output directory; must not hold files")
	fs.StringVar(&plats, "platforms", platforms, "comma-separated GOOS/GOARCH list")
	fs.StringVar(&r.pkg, "pkg", "./cmd/electd", "the package to build")
	dockerfile := fs.String("dockerfile", "", "write the Dockerfile rendered from tools/dist/image to this path, and build nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dockerfile != "" {
		if err := os.WriteFile(*dockerfile, []byte(image.Electd.Dockerfile()), 0o644); err != nil {
			fmt.Fprintf(stderr, "dist: %v\n", err)
			return 1
		}
		return 0
	}
	if r.version == "" || r.commit == "" || strings.ContainsAny(r.version+r.commit, "/ \t\n") {
		fmt.Fprintln(stderr, "dist: -version and -commit are required, without slashes or spaces")
		return 2
	}
	for _, p := range strings.Split(plats, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(stderr, "dist: -platforms: %q is not GOOS/GOARCH\n", p)
			return 2
		}
		r.platforms = append(r.platforms, platform{goos, goarch})
	}
	files, err := r.build(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "dist: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return 0
}
