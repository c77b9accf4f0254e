package zktest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/electd/electd/tests/harness/buildcache"
)

// CompileCurator compiles one Java program, class in source, against Curator's jars
// (CuratorClasspath) and returns that classpath and the directory of the class files. They are
// kept in the build cache (tests/harness/buildcache), keyed on the source, the classpath and the
// javac binary, so javac runs once per change, not once per test or bench run.
func CompileCurator(class string, source []byte) (cp, dir string, err error) {
	cp, err = CuratorClasspath()
	if err != nil {
		return "", "", err
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", "", errors.New("zktest: no `javac` in PATH: apt-get install -y default-jdk-headless (or openjdk-17-jdk-headless)")
	}
	if real, err := filepath.EvalSymlinks(javac); err == nil {
		javac = real
	}
	h := sha256.New()
	for _, part := range [][]byte{source, []byte(cp), []byte(javac)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	key := class + "-" + hex.EncodeToString(h.Sum(nil))[:20]
	dir, err = buildcache.Dir("javac", key, func(out string) error {
		src := filepath.Join(out, class+".java")
		if err := os.WriteFile(src, source, 0o644); err != nil {
			return err
		}
		cmd := exec.Command(javac, "-encoding", "UTF-8", "-cp", cp, "-d", out, src)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("javac %s.java: %v\n%s", class, err, msg)
		}
		return nil
	})
	return cp, dir, err
}
