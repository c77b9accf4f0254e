package nodetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Paths that containerd 1.6, the kubelet and the CNI library use whatever
// their configuration says. A run removes the ones it created; where one
// existed before, it removes only its own entries in it.
var fixedPaths = []string{
	"/run/containerd",                 // shim sockets (/run/containerd/s)
	"/run/netns",                      // containerd's pod namespaces (cni-*), ip netns's own
	"/var/lib/cni",                    // the CNI library's result cache
	"/var/lib/kubelet/device-plugins", // the kubelet's device plugin socket
	"/var/lib/kubelet",
	"/var/log/containers", // the kubelet's symlinks to the pods' logs
}

// kernelTunables are the sysctls the kubelet sets on start (it cannot be
// told not to, only to refuse to start: --protect-kernel-defaults). They are
// machine-wide; a run puts back what it found.
var kernelTunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// before is what the machine had before a run, written at its start and
// read by its teardown, or by the next run's when this one was killed.
type before struct {
	Existed  map[string]bool   `json:"existed"`
	Sysctls  map[string]string `json:"sysctls"`
	CgroupOK map[string]bool   `json:"cgroup_existed"` // /sys/fs/cgroup/<controller>/k8s.io
}

func beforePath() string { return filepath.Join(StateDir, "before.json") }

func recordBefore() (before, error) {
	b := before{Existed: map[string]bool{}, Sysctls: map[string]string{}, CgroupOK: map[string]bool{}}
	for _, p := range fixedPaths {
		_, err := os.Lstat(p)
		b.Existed[p] = err == nil
	}
	for _, s := range kernelTunables {
		v, err := os.ReadFile(filepath.Join("/proc/sys", s))
		if err == nil {
			b.Sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	for _, d := range cgroupDirs() {
		_, err := os.Stat(d)
		b.CgroupOK[d] = err == nil
	}
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return b, fmt.Errorf("nodetest: %w", err)
	}
	j, _ := json.Marshal(b)
	return b, os.WriteFile(beforePath(), j, 0o600)
}

// cgroupDirs are the k8s.io cgroups under each cgroup v1 controller, where
// containerd's CRI puts containers (cgroupfs driver, no QoS cgroups).
func cgroupDirs() []string {
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), "k8s.io"))
		}
	}
	return dirs
}

// teardown removes everything a run made, whether it is this run ending or
// a killed run found at the next start: the containers and their shims,
// the mounts (overlay root filesystems, the kubelet's volumes, the pods'
// network namespaces), cgroups, directories, the kubelet's sysctls, and the
// run's network namespaces. It keeps going past errors and returns them all.
func teardown() error {
	var errs []error
	b := before{Existed: map[string]bool{}}
	if j, err := os.ReadFile(beforePath()); err == nil {
		json.Unmarshal(j, &b)
	} else {
		// No record: treat every fixed path as pre-existing, so that only
		// this harness's own entries in them are removed.
		for _, p := range fixedPaths {
			b.Existed[p] = true
		}
	}
	killContainers()
	errs = append(errs, unmountUnder(RunDir, StateDir, "/run/containerd", "/run/netns/cni-")...)
	for _, d := range cgroupDirs() {
		if b.CgroupOK[d] {
			continue
		}
		if err := removeCgroup(d); err != nil {
			errs = append(errs, err)
		}
	}
	// Own entries in shared places: the kubelet's log symlinks point into
	// this run's pod log directory; the CNI cache files start with its
	// network's name.
	if links, err := os.ReadDir("/var/log/containers"); err == nil {
		for _, l := range links {
			p := filepath.Join("/var/log/containers", l.Name())
			if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, StateDir+"/") {
				os.Remove(p)
			}
		}
	}
	for _, pattern := range []string{"/var/lib/cni/results/" + cniNetwork + "-*", "/var/lib/cni/results/cni-loopback-*"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			os.Remove(f)
		}
	}
	for _, ns := range leftoverNetns() {
		if err := (&Netns{Name: ns, Path: filepath.Join("/run/netns", ns)}).Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range sortedKeys(b.Sysctls) {
		if err := os.WriteFile(filepath.Join("/proc/sys", s), []byte(b.Sysctls[s]), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("nodetest: restore %s: %w", s, err))
		}
	}
	// The fixed paths this run created, deepest first; /run/netns only when
	// no namespace is left in it (ip netns made it a mount point).
	for _, p := range fixedPaths {
		if b.Existed[p] {
			continue
		}
		if p == "/run/netns" {
			if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
				unix.Unmount(p, unix.MNT_DETACH)
				os.Remove(p)
			}
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("nodetest: %w", err))
		}
	}
	for _, d := range []string{RunDir, StateDir} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("nodetest: %w", err))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// procs maps every process to its parent and command line.
func procs() map[int]struct {
	ppid int
	cmd  string
} {
	out := map[int]struct {
		ppid int
		cmd  string
	}{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(e.Name())
		if err != nil {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = struct {
			ppid int
			cmd  string
		}{ppid, string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))}
	}
	return out
}

// killContainers kills the shims that serve this harness's containerd (they
// name its socket) and every process below them: the containers. They
// outlive containerd and the test binary, so only this finds them after a
// killed run.
func killContainers() {
	sock := newLayout().containerdSock
	for range 3 {
		ps := procs()
		var victims []int
		for pid, p := range ps {
			if strings.Contains(p.cmd, "containerd-shim") && strings.Contains(p.cmd, sock) {
				victims = append(victims, pid)
			}
		}
		if len(victims) == 0 {
			return
		}
		shims := map[int]bool{}
		for _, v := range victims {
			shims[v] = true
		}
		for pid := range ps {
			for a := ps[pid].ppid; a > 1; a = ps[a].ppid {
				if shims[a] {
					victims = append(victims, pid)
					break
				}
			}
		}
		for _, pid := range victims {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unmountUnder detaches every mount below the given prefixes, deepest
// first (a prefix without a trailing slash also matches names that start
// with it, as /run/netns/cni- does).
func unmountUnder(prefixes ...string) []error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []error{err}
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		for _, p := range prefixes {
			if mp == p || strings.HasPrefix(mp, p) && (strings.HasSuffix(p, "-") || strings.HasPrefix(mp, p+"/")) {
				points = append(points, mp)
				break
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, mp := range points {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("nodetest: umount %s: %w", mp, err))
		}
		if strings.HasPrefix(mp, "/run/netns/cni-") {
			os.Remove(mp)
		}
	}
	return errs
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroup kills what is left in a cgroup tree and removes it, deepest
// first (cgroup directories are removed with rmdir, not their files).
func removeCgroup(root string) error {
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var last error
	for _, d := range dirs {
		for try := 0; try < 20; try++ {
			if pids, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(pids)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if last = syscall.Rmdir(d); last == nil || errors.Is(last, syscall.ENOENT) {
				last = nil
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if last != nil {
			last = fmt.Errorf("nodetest: rmdir %s: %w", d, last)
		}
	}
	return last
}

// procStat reads /proc/<pid>/stat and returns its fields after the
// command, which is parenthesized and may hold spaces: the state first,
// then the parent's pid.
func procStat(pid string) ([]string, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("nodetest: /proc/%s/stat: no command", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return nil, fmt.Errorf("nodetest: /proc/%s/stat: %d fields after the command", pid, len(f))
	}
	return f, nil
}
