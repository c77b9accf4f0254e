package k8s

import (
	"path"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Every flavour keeps electd's ZooKeeper session for a restart of its
// container (docs/kubernetes.md, "A sidecar restart keeps the session"):
// zookeeper.session_file names a file in a memory-backed emptyDir that
// electd alone mounts, and POD_UID, which the file records, is the pod's
// UID from the downward API, so a copy on another pod is ignored.
func TestSessionIsKeptInMemoryForThePodAlone(t *testing.T) {
	forEachFlavour(t, checkSessionIsKeptInMemoryForThePodAlone)
}

func checkSessionIsKeptInMemoryForThePodAlone(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		e, ok := s.env["ELECTD_ZOOKEEPER_SESSION_FILE"]
		if !ok || e.ValueFrom != nil || !path.IsAbs(e.Value) {
			t.Errorf("%s: ELECTD_ZOOKEEPER_SESSION_FILE = %+v, want an absolute path", s.w.ref, e)
			continue
		}
		uid, ok := s.env["POD_UID"]
		if !ok || uid.ValueFrom == nil || uid.ValueFrom.FieldRef == nil || uid.ValueFrom.FieldRef.FieldPath != "metadata.uid" {
			t.Errorf("%s: POD_UID = %+v, want the downward API's metadata.uid", s.w.ref, uid)
		}
		vol := mountedVolume(s.w.template, s.c, e.Value)
		if vol == nil {
			t.Errorf("%s: %s is in no volume electd mounts: the root file system is read-only, and a restart must find it", s.w.ref, e.Value)
			continue
		}
		if vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory {
			t.Errorf("%s: volume %s is not an emptyDir with medium Memory: the password would reach a disk or outlive the pod", s.w.ref, vol.Name)
		}
		for _, c := range allContainers(&s.w.template.Spec) {
			for _, vm := range c.VolumeMounts {
				if vm.Name == vol.Name && c != s.c {
					t.Errorf("%s: container %s mounts the session volume too", s.w.ref, c.Name)
				}
				if vm.Name == vol.Name && vm.ReadOnly {
					t.Errorf("%s: %s mounts the session volume read-only", s.w.ref, c.Name)
				}
			}
		}
	}
}

// mountedVolume is the volume container c sees file in.
func mountedVolume(tmpl *corev1.PodTemplateSpec, c *corev1.Container, file string) *corev1.Volume {
	for _, vm := range c.VolumeMounts {
		if _, ok := under(file, vm.MountPath); !ok || vm.SubPath != "" {
			continue
		}
		for i := range tmpl.Spec.Volumes {
			if tmpl.Spec.Volumes[i].Name == vm.Name {
				return &tmpl.Spec.Volumes[i]
			}
		}
	}
	return nil
}
