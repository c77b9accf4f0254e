package nodetest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/electd/electd/tests/harness/zktest"
)

// ZooKeeperImage is the reference deploy/k8s/zookeeper.yaml names
// (zookeeper:3.8, resolved as a registry client does). The image imported
// under it is made here from Debian's ZooKeeper 3.8 jars and Java 17, so
// the shipped ensemble runs on the node unchanged: no registry serves the
// official image here.
const ZooKeeperImage = "docker.io/library/zookeeper:3.8"

// zkUser is the image's zookeeper user, as the official image has it and
// the manifest's runAsUser (1000) expects.
const zkUser = 1000

// ensembleJars are what a server of an ensemble needs besides
// tests/harness/zktest's (standalone) server classpath: Dropwizard's metrics, which
// a quorum peer's metrics load, snappy-java, which the snapshot code names,
// and for the admin server (the manifest's
// liveness probe, /commands/ruok) Jetty 9.4 and the servlet API.
var ensembleJars = []string{"metrics-core", "snappy-java", "jetty9-server", "jetty9-servlet", "jetty9-util", "jetty9-http", "jetty9-io", "jetty9-security", "servlet-api"}

// zkImageTools are the commands the manifest runs in the container: bash
// (its command and readiness probe), nc and grep (the readiness probe's
// `echo srvr | nc -w 2 127.0.0.1 2181 | grep -q '^Mode:'`).
var zkImageTools = map[string]string{"bash": "/usr/bin/bash", "grep": "/usr/bin/grep", "nc": "/usr/bin/nc"}

// The official image's contract that the manifest relies on: its
// entrypoint writes ZOO_MY_ID to /data/myid on the first start, then runs
// its arguments; zkServer.sh start-foreground runs the server in the
// foreground on /conf/zoo.cfg with a heap of ZK_SERVER_HEAP MiB.
const zkEntrypoint = `#!/usr/bin/bash
# The official zookeeper image's entrypoint, as far as
# deploy/k8s/zookeeper.yaml uses it: myid from ZOO_MY_ID on the first start.
set -e
if [[ ! -f /data/myid ]]; then
	echo "${ZOO_MY_ID:-1}" > /data/myid
fi
exec "$@"
`

const zkServerScript = `#!/usr/bin/bash
# zkServer.sh start-foreground, as the official image runs it: the server in
# the foreground on /conf/zoo.cfg, logging to stderr (slf4j-simple), with
# the heap of ZK_SERVER_HEAP and the flags of SERVER_JVMFLAGS and JVMFLAGS
# (zkEnv.sh's and zkServer.sh's order). The serial collector and the client
# compiler keep a 2-core node responsive.
if [[ "$1" != start-foreground ]]; then
	echo "zkServer.sh: this image runs start-foreground only" >&2
	exit 2
fi
SERVER_JVMFLAGS="-Xmx${ZK_SERVER_HEAP:-1000}m $SERVER_JVMFLAGS"
JVMFLAGS="$SERVER_JVMFLAGS $JVMFLAGS"
exec %s -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
	-Djava.net.preferIPv4Stack=true -Dzookeeper.log.dir=/logs -Dorg.slf4j.simpleLogger.showDateTime=true \
	-cp %s $JVMFLAGS org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
`

// zooKeeperImage assembles the ZooKeeper image from this machine's files:
// the JRE (its bin/java, lib and conf, symbolic links followed), the
// ZooKeeper server's jars with the admin server's, bash, grep and nc, the
// shared libraries all of them load (as ldd lists them), and the two
// scripts above.
func zooKeeperImage() (Image, error) {
	java, err := zktest.JavaPath()
	if err != nil {
		return Image{}, err
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		return Image{}, fmt.Errorf("nodetest: %w", err)
	}
	jre := filepath.Dir(filepath.Dir(java))
	cp, err := zktest.Classpath()
	if err != nil {
		return Image{}, err
	}
	jars := strings.Split(cp, string(os.PathListSeparator))
	for _, j := range ensembleJars {
		jars = append(jars, filepath.Join(zktest.JarDir, j+".jar"))
	}
	files := []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nzookeeper:x:%d:%d:zookeeper:/data:/sbin/nologin\n", zkUser, zkUser))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nzookeeper:x:%d:\n", zkUser))},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Path: "/tmp", Mode: 0o1777, Dir: true},
		{Path: "/data", Mode: 0o755, Dir: true},
		{Path: "/logs", Mode: 0o755, Dir: true},
		{Path: "/conf", Mode: 0o755, Dir: true},
		{Path: "/docker-entrypoint.sh", Mode: 0o755, Data: []byte(zkEntrypoint)},
		{Path: "/usr/local/bin/zkServer.sh", Mode: 0o755, Data: []byte(fmt.Sprintf(zkServerScript, java, strings.Join(jars, ":")))},
	}
	for _, j := range jars {
		if _, err := os.Stat(j); err != nil {
			return Image{}, fmt.Errorf("nodetest: the ZooKeeper image needs %s: scripts/install-deps.sh installs it", j)
		}
		files = append(files, File{Path: j, Mode: 0o644, Src: j})
	}
	native := []string{java, filepath.Join(jre, "lib", "server", "libjvm.so")}
	for _, l := range []string{"libjava", "libjli", "libnet", "libnio", "libzip", "libjimage", "libverify", "libmanagement", "libextnet"} {
		native = append(native, filepath.Join(jre, "lib", l+".so"))
	}
	for name, path := range zkImageTools {
		real, err := exec.LookPath(name)
		if err != nil {
			return Image{}, fmt.Errorf("nodetest: the ZooKeeper image needs %s: scripts/install-deps.sh installs it", name)
		}
		native = append(native, real)
		files = append(files, File{Path: path, Mode: 0o755, Src: real})
	}
	libs, err := sharedLibraries(native)
	if err != nil {
		return Image{}, err
	}
	files = append(files, libs...)
	jreFiles, err := treeFiles(jre, "bin/java", "lib", "conf", "release")
	if err != nil {
		return Image{}, err
	}
	files = append(files, jreFiles...)
	return Image{
		Ref: ZooKeeperImage, Entrypoint: []string{"/docker-entrypoint.sh"}, Cmd: []string{"zkServer.sh", "start-foreground"},
		User: fmt.Sprintf("%d:%d", zkUser, zkUser), Ports: []string{"2181/tcp", "2888/tcp", "3888/tcp", "8080/tcp"},
		Labels: map[string]string{"org.opencontainers.image.description": "ZooKeeper 3.8 from Debian's jars and Java 17, for the node tests (tests/harness/nodetest)"},
		Files:  files,
	}, nil
}

// sharedLibraries are the libraries ldd lists for the binaries, and the
// dynamic loader, at the paths the loader looks for them.
func sharedLibraries(bins []string) ([]File, error) {
	seen := map[string]bool{}
	for _, b := range bins {
		out, err := exec.Command("ldd", b).Output()
		if err != nil {
			return nil, fmt.Errorf("nodetest: ldd %s: %w", b, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
				seen[f[2]] = true
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				seen[f[0]] = true // the loader, by its absolute path
			}
		}
	}
	var files []File
	for p := range seen {
		if strings.HasPrefix(p, "/usr/lib/jvm/") {
			continue // in the JRE's tree
		}
		files = append(files, File{Path: p, Mode: 0o755, Src: p})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// treeFiles are the regular files under root's entries, at the same paths,
// with symbolic links followed (the JRE's conf links into /etc) and
// dangling ones left out.
func treeFiles(root string, entries ...string) ([]File, error) {
	var files []File
	for _, e := range entries {
		err := filepath.WalkDir(filepath.Join(root, e), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			st, err := os.Stat(p) // follows a link
			if err != nil || st.IsDir() {
				return nil
			}
			files = append(files, File{Path: p, Mode: int64(st.Mode().Perm()), Src: p})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("nodetest: %w", err)
		}
	}
	return files, nil
}
