package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ProvideVolumes makes a PersistentVolume for each claim a StatefulSet's
// volumeClaimTemplates will make in ns (data-zookeeper-0, ...), as a
// cluster's storage provisioner would: a directory on the node (hostPath,
// owned by uid, here the image's user, since the kubelet applies no fsGroup
// to a hostPath) of the given size, bound in advance to its claim, so the
// shipped claims bind without a StorageClass. The directories go with the
// node's state; Release deletes the volumes.
func (n *Node) ProvideVolumes(ctx context.Context, ns, size string, uid int, claims ...string) error {
	for _, c := range claims {
		dir := filepath.Join(StateDir, "volumes", ns, c)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("nodetest: %w", err)
		}
		if err := os.Chown(dir, uid, uid); err != nil {
			return fmt.Errorf("nodetest: %w", err)
		}
		pv := map[string]any{
			"apiVersion": "v1", "kind": "PersistentVolume",
			"metadata": map[string]any{"name": volumeName(ns, c), "labels": map[string]string{"electd-e2e/namespace": ns}},
			"spec": map[string]any{
				"capacity":                      map[string]string{"storage": size},
				"accessModes":                   []string{"ReadWriteOnce"},
				"persistentVolumeReclaimPolicy": "Retain",
				"hostPath":                      map[string]string{"path": dir, "type": "Directory"},
				"claimRef":                      map[string]string{"namespace": ns, "name": c},
			},
		}
		body, _ := json.Marshal(pv)
		code, b, err := n.Do(ctx, http.MethodPost, "/api/v1/persistentvolumes", bytes.NewReader(body))
		if err == nil && code != http.StatusCreated {
			err = fmt.Errorf("%d %s", code, tail(string(b), 300))
		}
		if err != nil {
			return fmt.Errorf("nodetest: create the volume for %s/%s: %w", ns, c, err)
		}
	}
	return nil
}

// ReleaseVolumes deletes the volumes ProvideVolumes made for ns (once its
// claims are gone with the namespace) and their directories.
func (n *Node) ReleaseVolumes(ctx context.Context, ns string) error {
	code, b, err := n.Do(ctx, http.MethodDelete, "/api/v1/persistentvolumes?labelSelector=electd-e2e%2Fnamespace%3D"+ns, nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%d %s", code, tail(string(b), 300))
	}
	if err != nil {
		return fmt.Errorf("nodetest: delete the volumes of %s: %w", ns, err)
	}
	return os.RemoveAll(filepath.Join(StateDir, "volumes", ns))
}

func volumeName(ns, claim string) string { return ns + "-" + claim }

// ProvisionClaims provides a volume (ProvideVolumes) for every claim made
// in ns, of the size it requests, until ctx ends: what a cluster's default
// StorageClass does for claims that name none, which the node has not.
// The volumes' directories are owned by uid.
func (n *Node) ProvisionClaims(ctx context.Context, ns string, uid int) {
	go func() {
		provided := map[string]bool{}
		for ctx.Err() == nil {
			_ = n.Watch(ctx, "/api/v1/namespaces/"+ns+"/persistentvolumeclaims", func(_ string, raw json.RawMessage) bool {
				var c corev1.PersistentVolumeClaim
				if json.Unmarshal(raw, &c) != nil || c.Spec.VolumeName != "" || provided[c.Name] || c.DeletionTimestamp != nil {
					return true
				}
				size := c.Spec.Resources.Requests[corev1.ResourceStorage]
				if n.ProvideVolumes(ctx, ns, size.String(), uid, c.Name) == nil {
					provided[c.Name] = true
				}
				return true
			})
			sleepCtx(ctx, 200*time.Millisecond)
		}
	}()
}
