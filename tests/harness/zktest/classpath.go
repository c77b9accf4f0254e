package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// JarDir is where Debian installs Java libraries.
const JarDir = "/usr/share/java"

// jar is one library on a classpath and the Debian package that ships it.
type jar struct{ name, pkg string }

var nettyJars = []jar{
	{"netty-handler", "libnetty-java"},
	{"netty-common", "libnetty-java"},
	{"netty-buffer", "libnetty-java"},
	{"netty-transport", "libnetty-java"},
	{"netty-codec", "libnetty-java"},
	{"netty-resolver", "libnetty-java"},
	{"netty-transport-native-epoll", "libnetty-java"},
	{"netty-transport-native-unix-common", "libnetty-java"},
}

// serverJars run org.apache.zookeeper.server.quorum.QuorumPeerMain. The server logs through
// slf4j-simple (to stderr, which goes to the member's log file) so that failures can be read.
var serverJars = concat([]jar{
	{"zookeeper", "zookeeper"},
	{"zookeeper-jute", "zookeeper"},
	{"slf4j-api", "libslf4j-java"},
	{"slf4j-simple", "libslf4j-java"},
}, nettyJars, []jar{
	{"commons-cli", "libcommons-cli-java"},
	{"commons-io", "libcommons-io-java"},
	{"jackson-core", "libjackson2-core-java"},
	{"jackson-databind", "libjackson2-databind-java"},
	{"jackson-annotations", "libjackson2-annotations-java"},
})

// curatorJars compile and run a Curator 5.4 client program (quiet: slf4j-nop).
var curatorJars = concat([]jar{
	{"curator-recipes", "libcurator-recipes-java"},
	{"curator-framework", "libcurator-framework-java"},
	{"curator-client", "libcurator-client-java"},
	{"zookeeper", "zookeeper"},
	{"zookeeper-jute", "zookeeper"},
	{"guava", "libguava-java"},
	{"slf4j-api", "libslf4j-java"},
	{"slf4j-nop", "libslf4j-java"},
}, nettyJars)

func concat(lists ...[]jar) []jar {
	var out []jar
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Classpath returns the classpath that runs a ZooKeeper server, or an error naming the
// missing jars (and the apt packages that install them) or the missing java binary.
func Classpath() (string, error) {
	return classpath(serverJars)
}

// CuratorClasspath returns the classpath for compiling (javac -cp) and running a Curator 5.4
// client program: curator-recipes, curator-framework, curator-client, zookeeper,
// zookeeper-jute, guava, slf4j-api, slf4j-nop and the netty jars. The error names what is
// missing and the apt packages to install.
func CuratorClasspath() (string, error) {
	return classpath(curatorJars)
}

// JavaPath returns the path of the java binary, or an error saying how to install it.
func JavaPath() (string, error) {
	p, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("zktest: no `java` in PATH: apt-get install -y default-jre-headless (Java 17 runs ZooKeeper 3.8)")
	}
	return p, nil
}

func classpath(jars []jar) (string, error) {
	var paths, missing []string
	var pkgs []string
	seen := map[string]bool{}
	for _, j := range jars {
		p := filepath.Join(JarDir, j.name+".jar")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
			if !seen[j.pkg] {
				seen[j.pkg] = true
				pkgs = append(pkgs, j.pkg)
			}
			continue
		}
		paths = append(paths, p)
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing %s: apt-get install -y %s",
			strings.Join(missing, ", "), strings.Join(pkgs, " ")))
	}
	if _, err := JavaPath(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "zktest: "))
	}
	if len(problems) > 0 {
		return "", errors.New("zktest: " + strings.Join(problems, "; "))
	}
	return strings.Join(paths, string(os.PathListSeparator)), nil
}
