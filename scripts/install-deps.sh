#!/usr/bin/env bash
# Installs the Debian packages electd's tests and demo need, only when one is
# missing. Idempotent: a second run installs nothing and prints one line.
#
#   scripts/install-deps.sh            everything `make test` needs
#   scripts/install-deps.sh zookeeper  only what `make demo` needs
#
# The full set also needs a Java compiler (the Curator interop tests compile
# a small Java program): when javac is missing, default-jdk-headless is added.
# etcd-server is the storage of the kube-apiserver that tests/harness/kubetest
# builds and runs for the Kubernetes tests; python3 runs the Python
# application of the data-plane tests (tests/harness/ledger/app.py, an http.server:
# standard library only); chromium is the headless browser
# tests/uitest drives the status page in; prometheus brings the Prometheus
# server that tests/harness/promtest runs the alert rules and the dashboard in, and
# promtool, which runs the rules' unit tests. prometheus is installed without
# its recommended packages (node exporter, smartmontools, ...), and when
# systemd starts its service on install, the service is stopped and disabled:
# the tests run their own server on loopback, and nothing should listen on
# :9090 because of them. containerd, runc, containernetworking-plugins
# (bridge, host-local, loopback, portmap), iptables (kube-proxy's mode),
# conntrack and iproute2 run the real node of `make e2e` (tests/harness/nodetest);
# netcat-openbsd (the ensemble's readiness probe runs `nc`), libjetty9-java
# (ZooKeeper's admin server, its liveness probe), libdropwizard-metrics-java
# (a quorum peer's metrics) and libsnappy-java (named by its snapshot code) go
# into the ZooKeeper image that tests/harness/nodetest builds from Debian's files for
# deploy/k8s/zookeeper.yaml.
# haproxy is the second floor of `make bench`'s forward section (BENCHMARKS.md,
# "Forwarding proxy"): the bench runs its own haproxy processes on loopback, so
# when the package starts its service on install, the service is stopped and
# disabled, as prometheus's is. curl and openssl run the commands of the
# docs as tests/docs does (every "```sh run" block: curl asks the sidecars,
# openssl makes the admin token), as a user would type them.
#
# As root it runs `apt-get update` once and `apt-get install -y` for the
# missing packages. As any other user it installs nothing: it names exactly
# what to install and exits 1.
set -euo pipefail

ALL_PACKAGES=(
	zookeeper
	libcurator-recipes-java
	libcurator-framework-java
	libcurator-client-java
	python3
	python3-kazoo
	python3-yaml
	etcd-server
	chromium
	prometheus
	containerd
	runc
	containernetworking-plugins
	iptables
	conntrack
	iproute2
	haproxy
	netcat-openbsd
	libjetty9-java
	libdropwizard-metrics-java
	libsnappy-java
	curl
	openssl
)

# Installed without their recommended packages.
LEAN_PACKAGES=(prometheus)

need_jdk=0
if [ "$#" -gt 0 ]; then
	wanted=("$@")
else
	wanted=("${ALL_PACKAGES[@]}")
	command -v javac >/dev/null 2>&1 || need_jdk=1
fi

say() { printf 'install-deps: %s\n' "$*" >&2; }

installed() {
	# Status "install ok installed" is the only state that counts: a package
	# that was removed but not purged still has an entry.
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	say "this is not a Debian-based system (no dpkg-query/apt-get)."
	say "install by hand: Apache ZooKeeper 3.8 jars in /usr/share/java (zookeeper.jar and its"
	say "dependencies), Apache Curator 5.x jars (curator-client, curator-framework,"
	say "curator-recipes), a Java runtime, Python 3 at /usr/bin/python3 with the modules"
	say "kazoo and yaml, etcd 3.4+"
	say "(the etcd binary in PATH, for the Kubernetes API server tests), Prometheus 2.42+"
	say "(prometheus and promtool in PATH, for the alert rule tests), and for make e2e"
	say "containerd 1.6+, runc, the CNI plugins bridge, host-local, loopback and portmap in"
	say "/usr/lib/cni, iptables, conntrack and iproute2; for make bench, HAProxy 2.4+."
	exit 1
fi

missing=()
for p in "${wanted[@]}"; do
	installed "$p" || missing+=("$p")
done
[ "$need_jdk" = 0 ] || missing+=(default-jdk-headless)

if [ "${#missing[@]}" -eq 0 ]; then
	say "all present: ${wanted[*]}"
	exit 0
fi

full=()
lean=()
for p in "${missing[@]}"; do
	case " ${LEAN_PACKAGES[*]} " in
	*" $p "*) lean+=("$p") ;;
	*) full+=("$p") ;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	say "missing Debian packages: ${missing[*]}"
	say "not running as root, so nothing was installed. Run:"
	say "  sudo apt-get update"
	[ "${#full[@]}" -eq 0 ] || say "  sudo apt-get install -y ${full[*]}"
	[ "${#lean[@]}" -eq 0 ] || say "  sudo apt-get install -y --no-install-recommends ${lean[*]}"
	exit 1
fi

say "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
[ "${#full[@]}" -eq 0 ] || apt-get install -y "${full[@]}"
[ "${#lean[@]}" -eq 0 ] || apt-get install -y --no-install-recommends "${lean[@]}"

# The services the packages start on install: the tests and the bench run
# servers of their own on loopback.
for service in prometheus haproxy; do
	case " ${missing[*]} " in
	*" $service "*)
		if [ -d /run/systemd/system ] && systemctl is-active --quiet "$service" 2>/dev/null; then
			say "stopping and disabling the $service service the package started"
			systemctl disable --now "$service"
		fi
		;;
	esac
done

for p in "${missing[@]}"; do
	if ! installed "$p"; then
		say "apt-get finished but $p is still not installed"
		exit 1
	fi
done
say "installed: ${missing[*]}"
