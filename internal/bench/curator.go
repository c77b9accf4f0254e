package bench

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/zktest"
)

//go:embed testdata/CuratorBench.java
var curatorSource []byte

const curatorClass = "CuratorBench"

// compileCurator compiles CuratorBench.java with javac against Debian's
// Curator 5.4 jars (zktest.CuratorClasspath), once per change of the
// source, the classpath or javac: the classes are kept under the user's
// cache directory. It returns the classpath that runs the program.
func compileCurator() (string, error) {
	cp, err := zktest.CuratorClasspath()
	if err != nil {
		return "", err
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", errors.New("no `javac` in PATH: apt-get install -y default-jdk-headless")
	}
	if real, err := filepath.EvalSymlinks(javac); err == nil {
		javac = real
	}
	h := sha256.New()
	for _, part := range [][]byte{curatorSource, []byte(cp), []byte(javac)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	root, err := os.UserCacheDir()
	if err != nil || root == "" {
		root = os.TempDir()
	}
	root = filepath.Join(root, "electd", "bench")
	dir := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:20])
	run := cp + string(os.PathListSeparator) + dir
	if _, err := os.Stat(filepath.Join(dir, curatorClass+".class")); err == nil {
		return run, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, curatorClass+".java")
	out := filepath.Join(tmp, "classes")
	if err := os.WriteFile(src, curatorSource, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(javac, "-encoding", "UTF-8", "-cp", cp, "-d", out, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %s.java: %v\n%s", curatorClass, err, msg)
	}
	// A concurrent bench may have published the same classes first: fine.
	if err := os.Rename(out, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, curatorClass+".class")); serr != nil {
			return "", err
		}
	}
	return run, nil
}

// curatorJVM is one running CuratorBench.
type curatorJVM struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  *bufio.Scanner
	stderr *os.File
}

// startCurator starts CuratorBench with n participants and waits for READY.
func startCurator(env *env, cp, connect, path string, n int, timeout time.Duration) (*curatorJVM, error) {
	java, err := zktest.JavaPath()
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(env.dir, "curator-"+strings.ReplaceAll(path[1:], "/", "-")+".log"))
	if err != nil {
		return nil, err
	}
	c := &curatorJVM{stderr: stderr}
	c.cmd = exec.Command(java, "-cp", cp, curatorClass, connect, path,
		strconv.Itoa(n), strconv.FormatInt(timeout.Milliseconds(), 10))
	c.cmd.Stderr = stderr
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.lines = bufio.NewScanner(stdout)
	if err := env.spawn.start(c.cmd); err != nil {
		return nil, fmt.Errorf("start java: %w", err)
	}
	if _, err := c.expect("READY"); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// expect reads the next line and returns what follows prefix on it.
func (c *curatorJVM) expect(prefix string) (string, error) {
	if !c.lines.Scan() {
		return "", fmt.Errorf("CuratorBench ended before %s; stderr %s:\n%s", prefix, c.stderr.Name(), tail(c.stderr.Name(), 20))
	}
	line := c.lines.Text()
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", fmt.Errorf("CuratorBench: %q, want %s", line, prefix)
	}
	return strings.TrimSpace(rest), nil
}

// do sends a command and reads its answer.
func (c *curatorJVM) do(cmd, want string) (string, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return "", fmt.Errorf("CuratorBench %s: %w", cmd, err)
	}
	return c.expect(want)
}

func (c *curatorJVM) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.stderr.Close()
}
