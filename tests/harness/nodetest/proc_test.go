package nodetest

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// ProcessGone sees a killed child as gone while it is still a zombie
// (nobody has waited for it), and times out on one that lives.
func TestProcessGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if _, err := ProcessGone(context.Background(), cmd.Process.Pid, 50*time.Millisecond); err == nil {
		t.Fatal("a running process reported gone")
	}
	if f, err := procStat(strconv.Itoa(cmd.Process.Pid)); err != nil || f[0] != "S" && f[0] != "R" {
		t.Fatalf("a running process's stat: %v, %v", f, err)
	}
	before := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	gone, err := ProcessGone(context.Background(), cmd.Process.Pid, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if gone.Before(before) {
		t.Fatalf("gone at %v, before the kill at %v", gone, before)
	}
}
