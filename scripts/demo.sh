#!/usr/bin/env bash
# electd demo: a local ZooKeeper, three electd sidecars, one leader, a
# handoff on SIGTERM and a release over HTTP.
#
#   scripts/demo.sh         interactive: pauses between steps when stdin is a terminal
#   scripts/demo.sh --ci    runs straight through; exits non-zero if a step fails
#
# DEMO_CI=1 (or no terminal on stdin) is the same as --ci. DEMO_BIN=path uses
# an electd binary instead of building one. Everything runs on 127.0.0.1 and
# is removed on exit, Ctrl-C included.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
	sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

CI_MODE=0
for arg in "$@"; do
	case $arg in
	--ci) CI_MODE=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "demo: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done
case ${DEMO_CI:-} in 1 | true | yes) CI_MODE=1 ;; esac
[ -t 0 ] || CI_MODE=1

N=3
ELECTION_PATH=/services/demo
SESSION_TIMEOUT=4s
TOKEN="demo-token-$RANDOM$RANDOM"
LEADER_DEADLINE_MS=30000  # first election, from the start of the sidecars
HANDOFF_DEADLINE_MS=20000 # SIGTERM or release to a new leader
GRACEFUL_MAX_MS=3000      # a graceful handoff must beat the 4 s session timeout
POLL=0.05                 # seconds between polls of a condition

# ---------------------------------------------------------------- output

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	B=$'\033[1m' G=$'\033[32m' R=$'\033[31m' Z=$'\033[0m'
else
	B='' G='' R='' Z=''
fi

step() { printf '\n%s==> %s%s\n' "$B" "$*" "$Z"; }
info() { printf '    %s\n' "$*"; }
ok() { printf '%s==> %s%s\n' "$G" "$*" "$Z"; }
cmd() { printf '    $ %s\n' "$*"; }

pause() {
	[ "$CI_MODE" = 1 ] && return 0
	printf '\n%s-- press Enter to continue (Ctrl-C quits) --%s' "$B" "$Z"
	read -r _ || true
}

fail() {
	printf '\n%sdemo: FAIL: %s%s\n' "$R" "$*" "$Z" >&2
	dump_logs >&2
	exit 1
}

dump_logs() {
	[ -n "${WORK:-}" ] && [ -d "$WORK" ] || return 0
	local f
	for f in "$WORK"/zk.log "$WORK"/web-*.log; do
		[ -f "$f" ] || continue
		printf '\n--- last lines of %s ---\n' "$(basename "$f")"
		tail -n 25 "$f"
	done
}

now_ms() { date +%s%3N; }

# ---------------------------------------------------------------- processes

WORK=""
ZK_PID=""
declare -a PID PORT ID

# exited PID: true once the process is gone or a zombie (kill -0 succeeds on
# an unreaped child, so it cannot tell).
exited() {
	local st
	if [ -r "/proc/$1/stat" ]; then
		st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
		[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
	else
		st=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
		[ -z "$st" ] || [[ $st == Z* ]]
	fi
}

# stop_pid PID SIGNAL DEADLINE_MS: signal, wait for the exit, then SIGKILL.
stop_pid() {
	local pid=$1 sig=$2 deadline=$(($(now_ms) + $3))
	kill "-$sig" "$pid" 2>/dev/null || return 0
	while ! exited "$pid"; do
		if [ "$(now_ms)" -ge "$deadline" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep "$POLL"
	done
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local i
	for i in "${!PID[@]}"; do
		if [ -n "${PID[$i]}" ]; then kill -TERM "${PID[$i]}" 2>/dev/null || true; fi
	done
	for i in "${!PID[@]}"; do
		if [ -n "${PID[$i]}" ]; then stop_pid "${PID[$i]}" TERM 5000; fi
	done
	if [ -n "$ZK_PID" ]; then stop_pid "$ZK_PID" TERM 5000; fi
	if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- ports

USED_PORTS=" "
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port sets PICKED to a free loopback port below the usual ephemeral
# range (32768+), so it does not collide with ports other tests get from the
# kernel.
pick_port() {
	local p i
	for i in $(seq 1 500); do
		p=$((20000 + RANDOM % 12000))
		case $USED_PORTS in *" $p "*) continue ;; esac
		if port_free "$p"; then
			USED_PORTS+="$p "
			PICKED=$p
			return 0
		fi
	done
	fail "found no free port on 127.0.0.1"
}

# ---------------------------------------------------------------- HTTP

# DEMO_HTTP=python3 forces the fallback (for testing it where curl exists).
if [ "${DEMO_HTTP:-}" != python3 ] && command -v curl >/dev/null 2>&1; then
	HTTP_CLIENT=curl
elif command -v python3 >/dev/null 2>&1; then
	HTTP_CLIENT=python3
else
	echo "demo: needs curl or python3 for HTTP: sudo apt-get install -y curl" >&2
	exit 1
fi

# http METHOD URL [TOKEN]: sets HTTP_CODE (000 when nothing answered) and HTTP_BODY.
http() {
	local method=$1 url=$2 token=${3:-}
	: >"$WORK/body"
	if [ "$HTTP_CLIENT" = curl ]; then
		local args=(-s -o "$WORK/body" -w '%{http_code}' -X "$method" --max-time 5)
		[ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
		HTTP_CODE=$(curl "${args[@]}" "$url" 2>/dev/null) || true
	else
		HTTP_CODE=$(python3 - "$method" "$url" "$token" "$WORK/body" <<'PY'
import sys, urllib.request, urllib.error
method, url, token, out = sys.argv[1:5]
req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
if token:
    req.add_header("Authorization", "Bearer " + token)
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
except Exception:
    code, body = 0, b""
with open(out, "wb") as f:
    f.write(body)
print("%03d" % code)
PY
		) || true
	fi
	[ -n "$HTTP_CODE" ] || HTTP_CODE=000
	HTTP_BODY=$(cat "$WORK/body")
}

# fencing_token JSON: the number after "fencing_token", or empty.
fencing_token() {
	printf '%s' "$1" | grep -o '"fencing_token": *[0-9][0-9]*' | head -n1 | grep -o '[0-9][0-9]*$' || true
}

# ---------------------------------------------------------------- ZooKeeper

JAVA_DIR=/usr/share/java
ZK_JARS="zookeeper zookeeper-jute slf4j-api slf4j-nop netty-handler netty-common netty-buffer
netty-transport netty-codec netty-resolver netty-transport-native-epoll
netty-transport-native-unix-common commons-cli commons-io"

zk_installed() { [ -f "$JAVA_DIR/zookeeper.jar" ] && [ -f "$JAVA_DIR/zookeeper-jute.jar" ] && command -v java >/dev/null 2>&1; }

# zk_cmd WORD: a ZooKeeper four-letter command on the demo's port, over bash's /dev/tcp.
zk_cmd() {
	( (exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" && printf '%s' "$1" >&3 && timeout 2 cat <&3) 2>/dev/null) || true
}

start_zookeeper() {
	local cp="" j
	for j in $ZK_JARS; do
		[ -f "$JAVA_DIR/$j.jar" ] && cp="$cp${cp:+:}$JAVA_DIR/$j.jar"
	done
	pick_port
	ZK_PORT=$PICKED
	mkdir -p "$WORK/zk/data"
	cat >"$WORK/zk/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$WORK/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,conf,mntr,stat
EOF
	java -Xms32m -Xmx256m -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain \
		"$WORK/zk/zoo.cfg" >"$WORK/zk.log" 2>&1 &
	ZK_PID=$!
	local deadline=$(($(now_ms) + 30000))
	# Ours, not another server on a port that was free a moment ago: conf names our data dir.
	until zk_cmd conf | grep -q "$WORK/zk/data"; do
		exited "$ZK_PID" && fail "ZooKeeper exited at start (see zk.log below)"
		[ "$(now_ms)" -lt "$deadline" ] || fail "ZooKeeper did not answer on 127.0.0.1:$ZK_PORT within 30 s"
		sleep "$POLL"
	done
}

# ---------------------------------------------------------------- electd

start_sidecar() {
	local i=$1 id="web-$1"
	pick_port
	PORT[i]=$PICKED
	ID[i]=$id
	cat >"$WORK/$id.yaml" <<EOF
id: $id
advertise: 127.0.0.1:$((8080 + i))
zookeeper:
  servers: [127.0.0.1:$ZK_PORT]
  session_timeout: $SESSION_TIMEOUT
election:
  path: $ELECTION_PATH
http:
  addr: 127.0.0.1:${PORT[$i]}
log:
  format: text
shutdown_timeout: 5s
EOF
	ELECTD_HTTP_ADMIN_TOKEN=$TOKEN "$BIN" --config "$WORK/$id.yaml" >"$WORK/$id.log" 2>&1 &
	PID[i]=$!
}

wait_healthy() {
	local i=$1 deadline=$(($(now_ms) + 15000))
	while :; do
		exited "${PID[$i]}" && fail "${ID[$i]} exited at start (see ${ID[$i]}.log below)"
		http GET "http://127.0.0.1:${PORT[$i]}/healthz"
		[ "$HTTP_CODE" = 200 ] && return 0
		[ "$(now_ms)" -lt "$deadline" ] || fail "${ID[$i]} did not answer /healthz within 15 s"
		sleep "$POLL"
	done
}

running() { [ -n "${PID[$1]}" ] && ! exited "${PID[$1]}"; }

# probe_all: fills IS[i] (yes/no/down) and SEEN[i] for every sidecar, then
# LEADERS (ids answering 200 on /healthz/leader) and AGREED (the one id every
# running sidecar reports as leader, or empty).
declare -a IS SEEN
probe_all() {
	local i seen="" disagree=0
	LEADERS=()
	for i in $(seq 1 "$N"); do
		if ! running "$i"; then
			IS[i]=down
			SEEN[i]=-
			continue
		fi
		http GET "http://127.0.0.1:${PORT[$i]}/healthz/leader"
		case $HTTP_CODE in
		200)
			IS[i]=yes
			LEADERS+=("${ID[$i]}")
			;;
		503) IS[i]=no ;;
		*) IS[i]="? ($HTTP_CODE)" ;;
		esac
		http GET "http://127.0.0.1:${PORT[$i]}/leader?format=text"
		if [ "$HTTP_CODE" = 200 ]; then
			SEEN[i]=$(printf '%s\n' "$HTTP_BODY" | head -n1 | tr -d '\r')
		else
			SEEN[i]="(none)"
		fi
		if [ -z "$seen" ]; then
			seen=${SEEN[$i]}
		elif [ "$seen" != "${SEEN[$i]}" ]; then
			disagree=1
		fi
	done
	AGREED=""
	if [ "${#LEADERS[@]}" -eq 1 ] && [ "$disagree" = 0 ] && [ "$seen" = "${LEADERS[0]}" ]; then
		AGREED=${LEADERS[0]}
	fi
}

print_table() {
	local i
	printf '    %-8s %-10s %s\n' id is_leader "leader seen"
	for i in $(seq 1 "$N"); do
		printf '    %-8s %-10s %s\n' "${ID[$i]}" "${IS[$i]}" "${SEEN[$i]}"
	done
}

# wait_agreed NOT_ID DEADLINE_MS: until exactly one sidecar answers 200, it is
# not NOT_ID, and every running sidecar names it; sets AGREED. Two leaders in
# three polls in a row fail at once: one poll alone can straddle a handoff.
wait_agreed() {
	local not=$1 deadline=$(($(now_ms) + $2)) twice=0
	while :; do
		probe_all
		if [ "${#LEADERS[@]}" -gt 1 ]; then
			twice=$((twice + 1))
			if [ "$twice" -ge 3 ]; then
				print_table
				fail "two leaders at once: ${LEADERS[*]}"
			fi
		else
			twice=0
		fi
		[ -n "$AGREED" ] && [ "$AGREED" != "$not" ] && return 0
		if [ "$(now_ms)" -ge "$deadline" ]; then
			print_table
			fail "no single agreed leader within $(($2 / 1000)) s"
		fi
		sleep "$POLL"
	done
}

# wait_new_leader NOT_ID DEADLINE_MS: polls /healthz/leader only (fast) until
# a running sidecar other than NOT_ID answers 200; sets NEW_LEADER.
wait_new_leader() {
	local not=$1 deadline=$(($(now_ms) + $2)) i
	while :; do
		for i in $(seq 1 "$N"); do
			[ "${ID[$i]}" = "$not" ] && continue
			running "$i" || continue
			http GET "http://127.0.0.1:${PORT[$i]}/healthz/leader"
			if [ "$HTTP_CODE" = 200 ]; then
				NEW_LEADER=${ID[$i]}
				return 0
			fi
		done
		[ "$(now_ms)" -lt "$deadline" ] || fail "no new leader within $(($2 / 1000)) s after $not let go"
		sleep 0.01
	done
}

# log_ms ID MSG: wall-clock epoch ms of the last msg=MSG line in ID's log
# (text format), empty if none. The demo's own timings include curl polling;
# electd's log says when the new leader actually took over.
log_ms() {
	local t
	t=$(grep " msg=$2 " "$WORK/$1.log" 2>/dev/null | tail -n1 | sed -n 's/^time=\([^ ]*\) .*/\1/p')
	[ -n "$t" ] && date -d "$t" +%s%3N
}

# took_note ID T0_MS: " (electd's log: elected N ms after that)", or nothing.
took_note() {
	local e
	e=$(log_ms "$1" elected || true)
	[ -n "$e" ] && [ "$e" -ge "$2" ] && printf " (by %s's log: elected %d ms after it; the rest is curl polling)" "$1" $((e - $2))
}

index_of() {
	local i
	for i in $(seq 1 "$N"); do [ "${ID[$i]}" = "$1" ] && echo "$i" && return 0; done
	return 1
}

# ---------------------------------------------------------------- 0: setup

step "electd demo: three sidecars, one ZooKeeper, one leader"
[ "$CI_MODE" = 1 ] && info "(non-interactive: no pauses)"

if ! zk_installed; then
	info "ZooKeeper (Debian package zookeeper) is not installed; trying scripts/install-deps.sh"
	bash "$ROOT/scripts/install-deps.sh" zookeeper ||
		{
			echo "demo: ZooKeeper is needed: sudo apt-get update && sudo apt-get install -y zookeeper" >&2
			exit 1
		}
	zk_installed || {
		echo "demo: still no $JAVA_DIR/zookeeper.jar or java after installing; install the zookeeper package" >&2
		exit 1
	}
fi

# Our own settings only: an ELECTD_* variable from the caller's shell would
# override the sidecars' files.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^ELECTD_' || true)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/electd-demo.XXXXXX")

if [ -n "${DEMO_BIN:-}" ]; then
	BIN=$DEMO_BIN
	[ -x "$BIN" ] || fail "DEMO_BIN=$BIN is not an executable"
else
	command -v go >/dev/null 2>&1 || fail "Go is needed to build electd (or set DEMO_BIN)"
	info "building electd ..."
	(cd "$ROOT" && go build -o "$WORK/electd" ./cmd/electd) || fail "go build ./cmd/electd failed"
	BIN=$WORK/electd
fi
info "electd: $("$BIN" --version 2>&1 | head -n1)"

start_zookeeper
info "ZooKeeper $(zk_cmd srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone on 127.0.0.1:$ZK_PORT (tickTime 500 ms, data in $WORK/zk)"

# ---------------------------------------------------------------- 1: election

step "1. three sidecars join $ELECTION_PATH (session_timeout $SESSION_TIMEOUT)"
for i in $(seq 1 "$N"); do start_sidecar "$i"; done
for i in $(seq 1 "$N"); do wait_healthy "$i"; done
info "web-1's configuration ($WORK/web-1.yaml; the admin token comes from ELECTD_HTTP_ADMIN_TOKEN):"
sed 's/^/      /' "$WORK/web-1.yaml"
for i in $(seq 1 "$N"); do info "${ID[$i]}: http://127.0.0.1:${PORT[$i]}  pid ${PID[$i]}"; done

t0=$(now_ms)
wait_agreed "" "$LEADER_DEADLINE_MS"
LEADER=$AGREED
print_table
ok "one leader: $LEADER (all $N sidecars agree, $(($(now_ms) - t0)) ms after they answered /healthz)"

li=$(index_of "$LEADER")
fi_=$((li % N + 1))
cmd "curl -s http://127.0.0.1:${PORT[$fi_]}/leader      # asked on follower ${ID[$fi_]}"
http GET "http://127.0.0.1:${PORT[$fi_]}/leader"
info "$HTTP_BODY"
cmd "curl -s http://127.0.0.1:${PORT[$li]}/healthz/leader   # asked on the leader"
http GET "http://127.0.0.1:${PORT[$li]}/healthz/leader"
info "$HTTP_CODE $HTTP_BODY"
TOKEN1=$(fencing_token "$HTTP_BODY")
cmd "curl -s http://127.0.0.1:${PORT[$li]}/metrics | grep -E '^electd_(is_leader|fencing_token|participants)'"
http GET "http://127.0.0.1:${PORT[$li]}/metrics"
printf '%s\n' "$HTTP_BODY" | grep -E '^electd_(is_leader|fencing_token|participants)' | sed 's/^/    /' || true
pause

# ---------------------------------------------------------------- 2: handoff

step "2. stop the leader $LEADER with SIGTERM: it answers 503, deletes its node, exits"
cmd "kill -TERM ${PID[$li]}"
t0=$(now_ms)
kill -TERM "${PID[$li]}"
wait_new_leader "$LEADER" "$HANDOFF_DEADLINE_MS"
handoff_ms=$(($(now_ms) - t0))
OLD_PID=${PID[$li]}
deadline=$(($(now_ms) + 10000))
while ! exited "$OLD_PID"; do
	[ "$(now_ms)" -lt "$deadline" ] || fail "$LEADER did not exit within 10 s of SIGTERM"
	sleep "$POLL"
done
rc=0
wait "$OLD_PID" || rc=$?
PID[li]=""
info "$LEADER exited with status $rc"
[ "$rc" = 0 ] || fail "$LEADER exited with status $rc after SIGTERM, want 0"
wait_agreed "$LEADER" "$HANDOFF_DEADLINE_MS"
[ "$AGREED" = "$NEW_LEADER" ] || fail "first new leader was $NEW_LEADER, now all agree on $AGREED"
print_table
http GET "http://127.0.0.1:${PORT[$(index_of "$NEW_LEADER")]}/healthz/leader"
TOKEN2=$(fencing_token "$HTTP_BODY")
if [ -n "$TOKEN1" ] && [ -n "$TOKEN2" ]; then
	[ "$TOKEN2" -gt "$TOKEN1" ] || fail "fencing token did not grow: $TOKEN1 then $TOKEN2"
	info "fencing token: $TOKEN1 -> $TOKEN2 (a storage write guarded by it now rejects $LEADER)"
fi
ok "handoff: $NEW_LEADER leads $handoff_ms ms after SIGTERM to $LEADER$(took_note "$NEW_LEADER" "$t0")"
[ "$handoff_ms" -le "$GRACEFUL_MAX_MS" ] ||
	fail "handoff took $handoff_ms ms: a graceful release should beat the $SESSION_TIMEOUT session timeout"
LEADER=$NEW_LEADER
pause

# ---------------------------------------------------------------- 3: release

li=$(index_of "$LEADER")
step "3. ask the leader $LEADER to give up leadership: POST /leader/release"
cmd "curl -s -X POST http://127.0.0.1:${PORT[$li]}/leader/release    # no token"
http POST "http://127.0.0.1:${PORT[$li]}/leader/release"
info "$HTTP_CODE $HTTP_BODY"
[ "$HTTP_CODE" = 401 ] || fail "release without a token answered $HTTP_CODE, want 401"
cmd "curl -s -X POST -H 'Authorization: Bearer \$TOKEN' http://127.0.0.1:${PORT[$li]}/leader/release"
t0=$(now_ms)
http POST "http://127.0.0.1:${PORT[$li]}/leader/release" "$TOKEN"
info "$HTTP_CODE $HTTP_BODY"
[ "$HTTP_CODE" = 202 ] || fail "release with the token answered $HTTP_CODE, want 202"
wait_new_leader "$LEADER" "$HANDOFF_DEADLINE_MS"
release_ms=$(($(now_ms) - t0))
wait_agreed "$LEADER" "$HANDOFF_DEADLINE_MS"
print_table
ok "release: $LEADER answered 202; $AGREED leads $release_ms ms later$(took_note "$AGREED" "$t0"), $LEADER re-queued as a follower"

printf '\n%sdemo: OK%s (one leader, handoff on SIGTERM in %s ms, release in %s ms)\n' "$G" "$Z" "$handoff_ms" "$release_ms"
