package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// licenseSource is one body of code compiled into the binaries that has a
// licence of its own: a dependency module, or a directory of electd's module
// with its own LICENSE (third_party/...).
type licenseSource struct {
	name string // module path@version, or the directory in electd's module
	dir  string
}

// goPackage is the part of `go list -json` read here.
type goPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct {
		Path    string
		Version string
		Dir     string
		Main    bool
	}
}

// thirdPartyNotices lists the licences of everything the binaries of pkg
// contain, on every platform, except electd's own and Go's standard library
// (Go's BSD licence, which also covers what the toolchain links in, is
// added at the end).
func thirdPartyNotices(pkg string, platforms []platform) ([]byte, error) {
	sources := map[string]licenseSource{}
	for _, p := range platforms {
		pkgs, err := listDeps(pkg, p)
		if err != nil {
			return nil, err
		}
		for _, gp := range pkgs {
			switch {
			case gp.Standard:
			case gp.Module == nil:
				return nil, fmt.Errorf("%s: not in a module", gp.ImportPath)
			case !gp.Module.Main:
				name := gp.Module.Path + "@" + gp.Module.Version
				sources[name] = licenseSource{name, gp.Module.Dir}
			default:
				// A directory of electd's module with a licence of its own
				// (vendored code): the package's directory or a parent.
				if dir, ok := ownLicenseDir(gp.Dir, gp.Module.Dir); ok {
					rel, _ := filepath.Rel(gp.Module.Dir, dir)
					sources[rel] = licenseSource{filepath.ToSlash(rel), dir}
				}
			}
		}
	}
	var names []string
	for n := range sources {
		names = append(names, n)
	}
	slices.Sort(names)

	var b bytes.Buffer
	fmt.Fprintf(&b, "electd's binaries contain code from the following projects, under these licences.\n")
	for _, n := range names {
		text, err := licenseText(sources[n].dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		fmt.Fprintf(&b, "\n%s\n%s\n\n%s\n", strings.Repeat("=", 78), n, bytes.TrimSpace(text))
		// Apache-2.0, section 4(d): a NOTICE file travels with the work.
		if notice, ok := noticeText(sources[n].dir); ok {
			fmt.Fprintf(&b, "\n%s NOTICE:\n\n%s\n", n, bytes.TrimSpace(notice))
		}
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	text, err := licenseText(strings.TrimSpace(string(goroot)))
	if err != nil {
		return nil, fmt.Errorf("Go: %w", err)
	}
	fmt.Fprintf(&b, "\n%s\nGo (standard library and runtime)\n\n%s\n", strings.Repeat("=", 78), bytes.TrimSpace(text))
	return b.Bytes(), nil
}

func listDeps(pkg string, p platform) ([]goPackage, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Standard,Module", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.goos, "GOARCH="+p.goarch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s for %s/%s: %v\n%s", pkg, p.goos, p.goarch, err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var gp goPackage
		if err := dec.Decode(&gp); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, gp)
	}
	return pkgs, nil
}

// licenseNames are the names a licence file goes by, in order of
// preference, each bare or with one of licenseExts.
var (
	licenseNames = []string{"LICENSE", "LICENCE", "COPYING", "License"}
	licenseExts  = []string{"", ".txt", ".md"}
)

func licenseText(dir string) ([]byte, error) {
	if b, ok := firstFile(dir, licenseNames); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w in %s", errNoLicense, dir)
}

func noticeText(dir string) ([]byte, bool) {
	return firstFile(dir, []string{"NOTICE"})
}

// firstFile reads the first of names (each with the extensions of
// licenseExts) that exists in dir.
func firstFile(dir string, names []string) ([]byte, bool) {
	for _, name := range names {
		for _, ext := range licenseExts {
			if b, err := os.ReadFile(filepath.Join(dir, name+ext)); err == nil {
				return b, true
			}
		}
	}
	return nil, false
}

// ownLicenseDir finds the nearest directory from dir up to (not including)
// the module root that has a licence file.
func ownLicenseDir(dir, root string) (string, bool) {
	for d := dir; d != root && strings.HasPrefix(d, root+string(filepath.Separator)); d = filepath.Dir(d) {
		if _, err := licenseText(d); err == nil {
			return d, true
		}
	}
	return "", false
}
