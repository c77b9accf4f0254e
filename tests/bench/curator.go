package bench

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/proctest"
	"github.com/electd/electd/tests/harness/zktest"
)

//go:embed testdata/CuratorBench.java
var curatorSource []byte

const curatorClass = "CuratorBench"

// compileCurator compiles CuratorBench.java against Debian's Curator 5.4 jars
// (zktest.CompileCurator, cached across runs) and returns the classpath that
// runs it.
func compileCurator() (string, error) {
	cp, dir, err := zktest.CompileCurator(curatorClass, curatorSource)
	if err != nil {
		return "", err
	}
	return cp + string(os.PathListSeparator) + dir, nil
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
	if err := proctest.Start(c.cmd); err != nil {
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
		return "", fmt.Errorf("CuratorBench ended before %s; stderr %s:\n%s", prefix, c.stderr.Name(), electdtest.TailFile(c.stderr.Name(), 20))
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
