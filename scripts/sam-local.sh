#!/usr/bin/env bash
# sam-local.sh (make sam-local): runs the Lambda function the way users test it before deploying —
# `sam local invoke` and `sam local start-lambda` + `aws lambda invoke` — against MinIO (S3),
# moto_server (DynamoDB, and STS for the SAM CLI) and an Iggy broker (the in-repo one, speaking Iggy 0.9's
# protocol; IGGY_BROKER_PROTOCOL=0.8 or 0.10 for another), all on this machine and
# offline. It installs what is missing, starts a Docker engine only when none answers (and then
# leaves bridge, iptables and ip_forward as it found them), drains produced messages and checks the
# objects with an independent reader (scripts/samlocal_check.py). See docs/local.md.
#
# The function is built into the work directory, never into the user's .aws-sam/: that build is
# for this machine's architecture (x86_64 here), and the next `sam deploy` would ship it.
#
# Locally, without root or a usable engine, it skips with one line; with CI=true that is a failure.
# IGGY_TEST_ADDRESS=host:port uses a real Iggy server, 0.8, 0.9 or 0.10 (user iggy/iggy), instead of the in-repo
# broker, in a stream of its own. KEEP=1 keeps the work directory.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/.bin
export PATH="$BIN:$PATH" SAM_CLI_TELEMETRY=0 AWS_EC2_METADATA_DISABLED=true
WAVE_MESSAGES=40 # per partition and wave
PARTITIONS=3
MAX_INVOKES=15

say() { printf 'sam-local: %s\n' "$*"; }
die() {
	say "FAILED: $*"
	exit 1
}
# skip_or_fail: the one line a local run without root or engine prints; in CI a failure.
skip_or_fail() {
	if [[ ${CI:-} == true ]]; then die "$* (CI=true: this must work)"; fi
	say "skipped: $*"
	exit 0
}
T_START=$(date +%s.%N)
T_LAST=$T_START
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
# took LABEL: one log line with the time since the previous one (the step's cost).
took() {
	printf 'sam-local: %-64s %6ss\n' "$1" "$(since "$T_LAST")"
	T_LAST=$(date +%s.%N)
}

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

[[ $(uname -s) == Linux ]] || skip_or_fail "needs Linux (Docker engine, busybox rootfs)"
if [[ $(id -u) != 0 ]] && ! engine_answers; then
	skip_or_fail "no Docker engine answers, and installing or starting one needs root"
fi

# Another run on this machine holds the bridge gateway's ports: wait for it. (Servers started
# below close fd 9, so none of them holds the lock after the script.) flock needs no write access.
LOCK=/tmp/iggy-s3-sink-sam-local.lock
{ exec 9>>"$LOCK" && chmod 666 "$LOCK"; } 2>/dev/null || exec 9<"$LOCK"
flock -w 900 9 || die "another sam-local run holds the lock for 15 minutes"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sam-local.XXXXXX")
PIDS=()            # servers started here, stopped by PID in reverse order
DOCKERD_PID=""     # set when this script started the engine
CREATED_IMAGES=()  # images created in an engine this script did not start
NET_RECORDED=""

stop_pid() { # PID [signal]: stop one process we started, waiting up to 20 s
	local pid=$1 sig=${2:-TERM} i
	kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# stop_server PID [signal]: stop a server started here and forget its PID (never signal it again).
stop_server() {
	stop_pid "$@"
	local keep=() p
	for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

cleanup() {
	local rc=$? i
	set +e
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}"; done
	# SAM's derived image first: it is built on the base.
	for ((i = ${#CREATED_IMAGES[@]} - 1; i >= 0; i--)); do docker image rm -f "${CREATED_IMAGES[i]}" >/dev/null 2>&1; done
	if [[ -n $DOCKERD_PID ]]; then
		stop_pid "$DOCKERD_PID"
		# Overlay mounts of a dockerd that died hard would keep the work directory busy.
		grep -o " $WORK[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
	fi
	[[ -n $NET_RECORDED ]] && restore_network
	if [[ ${KEEP:-} == 1 ]]; then say "work directory kept: $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. Tools -------------------------------------------------------------------------------------

need_root() { # WHAT: installing WHAT or starting dockerd needs root
	[[ $(id -u) == 0 ]] || skip_or_fail "no usable Docker engine and not root ($1 needs root)"
}

apt_install() {
	need_root "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	# Debian's docker.io would start its service on install; a policy-rc.d that says no keeps the
	# engine ours to start and stop (removed again if it was not there).
	local policy=/usr/sbin/policy-rc.d added=""
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
	fi
	if ! apt-get install -y -q --no-install-recommends "$@" >"$WORK/apt.log" 2>&1; then
		apt-get update -q >>"$WORK/apt.log" 2>&1 || true
		apt-get install -y -q --no-install-recommends "$@" >>"$WORK/apt.log" 2>&1 || {
			[[ -n $added ]] && rm -f "$policy"
			skip_or_fail "apt-get install $* failed: $(tail -n 1 "$WORK/apt.log")"
		}
	fi
	[[ -n $added ]] && rm -f "$policy"
	return 0
}

install_tools() {
	local pkgs=()
	if ! engine_answers && ! command -v dockerd >/dev/null; then pkgs+=(docker.io); fi
	command -v docker >/dev/null || pkgs+=(docker.io)
	[[ $(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null) == "install ok installed" ]] || pkgs+=(busybox-static)
	command -v ip >/dev/null && command -v ss >/dev/null || pkgs+=(iproute2)
	command -v curl >/dev/null || pkgs+=(curl)
	if ((${#pkgs[@]})); then
		apt_install $(printf '%s\n' "${pkgs[@]}" | sort -u)
		took "installed from Debian: ${pkgs[*]}"
	fi
	if ! command -v sam >/dev/null; then
		make -s -C "$ROOT" sam-cli >"$WORK/sam-cli.log" 2>&1 || true
		command -v sam >/dev/null || die "the AWS SAM CLI could not be installed: $(tail -n 2 "$WORK/sam-cli.log")"
		took "installed the AWS SAM CLI into .bin/samcli"
	fi
	if ! command -v aws >/dev/null; then
		make -s -C "$ROOT" aws-cli >"$WORK/awscli.log" 2>&1 || true
		command -v aws >/dev/null || die "awscli could not be installed: $(tail -n 2 "$WORK/awscli.log")"
		took "installed awscli into a venv under .bin/"
	fi
	if [[ ! -x $BIN/minio ]] || ! command -v moto_server >/dev/null; then
		make -s -C "$ROOT" "$BIN/minio" py-moto >"$WORK/tools.log" 2>&1 || die "make tools: $(tail -n 3 "$WORK/tools.log")"
		took "built MinIO / installed moto_server"
	fi
	# The checker reads MinIO with boto3: moto_server's venv has it (moto needs it).
	local py=python3 venv_py
	venv_py=$(dirname "$(readlink -f "$(command -v moto_server)")")/python
	[[ -x $venv_py ]] && py=$venv_py
	"$py" -c 'import boto3' 2>/dev/null || die "no Python with boto3 for the checker (make py-tools)"
	CHECK=("$py" "$ROOT/scripts/samlocal_check.py")
	(cd "$ROOT" && go build -o "$WORK/testbroker" ./internal/iggy/iggytest/cmd/testbroker &&
		go build -o "$WORK/samlocal" ./internal/testkit/samlocal) || die "building the test broker and producer failed"
	took "tools ready (sam $(sam --version | awk '{print $NF}'), $(aws --version 2>&1 | cut -d' ' -f1))"
}

# ---- 2. The engine --------------------------------------------------------------------------------

# Paths dockerd and its containerd create outside their data and exec roots (dockerd 20.10 keeps a
# trust key in /etc/docker; shims put sockets in /run/containerd/s): removed after if new.
HOST_PATHS=(/etc/docker/key.json /run/docker /run/containerd /var/run/docker.sock)

record_network() {
	HAD_DOCKER0=0
	ip link show docker0 >/dev/null 2>&1 && HAD_DOCKER0=1
	FORWARD_BEFORE=$(cat /proc/sys/net/ipv4/ip_forward)
	iptables-save 2>/dev/null | normalize_rules >"$WORK/iptables.before"
	NEW_PATHS=()
	local p
	for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || NEW_PATHS+=("$p"); done
	NET_RECORDED=1
}

# normalize_rules drops counters and comments, and tables holding nothing but built-in chains
# with policy ACCEPT (the iptables CLI cannot delete a table, so an emptied one still prints).
normalize_rules() {
	sed -e 's/ \[[0-9]*:[0-9]*\]$//' -e '/^#/d' | awk '
		/^\*/ { table = $0; body = ""; keep = 0; next }
		/^COMMIT/ { if (keep) print table "\n" body "COMMIT"; next }
		{ body = body $0 "\n"; if ($0 !~ /^:[A-Z]+ ACCEPT$/) keep = 1 }'
}

rules_now() { iptables-save 2>/dev/null | normalize_rules; }

# restore_network puts back what dockerd may change: iptables rules (the engine runs with
# --iptables=false, so only a surprise would change them), docker0, ip_forward, and files.
restore_network() {
	local t c p
	if [[ $(rules_now) != "$(cat "$WORK/iptables.before")" ]]; then
		for t in filter nat; do
			iptables -t "$t" -F 2>/dev/null
			iptables -t "$t" -X 2>/dev/null
			for c in $(iptables -t "$t" -S 2>/dev/null | awk '$1 == "-P" {print $2}'); do iptables -t "$t" -P "$c" ACCEPT; done
		done
		[[ -s $WORK/iptables.before ]] && iptables-restore <"$WORK/iptables.before"
	fi
	[[ $HAD_DOCKER0 == 0 ]] && ip link delete docker0 2>/dev/null
	echo "$FORWARD_BEFORE" >/proc/sys/net/ipv4/ip_forward
	for p in "${NEW_PATHS[@]}"; do rm -rf "$p"; done
	if [[ $(rules_now) != "$(cat "$WORK/iptables.before")" ]] || [[ $HAD_DOCKER0 == 0 && -e /sys/class/net/docker0 ]] ||
		[[ $(cat /proc/sys/net/ipv4/ip_forward) != "$FORWARD_BEFORE" ]]; then
		say "FAILED: the host is not as it was before dockerd (iptables, docker0 or ip_forward differ)"
		exit 1
	fi
	say "host restored: iptables rules as before, docker0 $([[ $HAD_DOCKER0 == 1 ]] && echo kept || echo removed), ip_forward=$FORWARD_BEFORE, ${#NEW_PATHS[@]} engine paths removed"
}

start_engine() {
	if engine_answers; then
		say "using the Docker engine that answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
		return
	fi
	need_root "starting dockerd"
	command -v dockerd >/dev/null || skip_or_fail "no dockerd after installing docker.io"
	record_network
	mkdir -p "$WORK/docker/data" "$WORK/docker/exec"
	# A private socket, data root and exec root: nothing of this engine outlives the run. No
	# iptables rules and no ip_forward: the function only talks to the bridge gateway (this host),
	# and SAM reaches the container through a port docker-proxy publishes on 127.0.0.1.
	export DOCKER_HOST=unix://$WORK/docker/docker.sock
	dockerd --host "$DOCKER_HOST" --data-root "$WORK/docker/data" --exec-root "$WORK/docker/exec" \
		--pidfile "$WORK/docker/dockerd.pid" --iptables=false --ip6tables=false --ip-forward=false \
		>"$WORK/dockerd.log" 2>&1 9>&- &
	DOCKERD_PID=$!
	local i
	for ((i = 0; i < 300; i++)); do
		engine_answers && break
		kill -0 "$DOCKERD_PID" 2>/dev/null || skip_or_fail "dockerd exited: $(tail -n 1 "$WORK/dockerd.log")"
		sleep 0.1
	done
	engine_answers || skip_or_fail "dockerd did not answer within 30 s: $(tail -n 1 "$WORK/dockerd.log")"
	took "started dockerd $(docker version -f '{{.Server.Version}}') (pid $DOCKERD_PID)"
}

# ---- 3. Images and the function -------------------------------------------------------------------

case $(uname -m) in
x86_64) ARCH=x86_64 ;;
aarch64 | arm64) ARCH=arm64 ;;
*) skip_or_fail "no Lambda architecture for $(uname -m)" ;;
esac
OFFICIAL_IMAGE=public.ecr.aws/lambda/provided:al2023-$ARCH
OFFLINE_IMAGE=iggy-s3-sink/lambda-base-offline:al2023-$ARCH
IMAGE_ARGS=()

base_image() {
	if docker image inspect "$OFFICIAL_IMAGE" >/dev/null 2>&1; then
		say "using the official base image $OFFICIAL_IMAGE"
		return
	fi
	# What SAM's rapid layer needs (sh, mv, chmod) from Debian's static busybox; bootstrap is static.
	local fs=$WORK/rootfs l
	mkdir -p "$fs"/{bin,tmp,etc,opt,var/task,var/runtime,var/rapid}
	chmod 1777 "$fs/tmp"
	cp /bin/busybox "$fs/bin/busybox"
	for l in sh mv chmod cp rm ls cat env mkdir; do ln -s busybox "$fs/bin/$l"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$fs/etc/passwd"
	echo 'root:x:0:' >"$fs/etc/group"
	# In an engine this script did not start, remove afterwards what it adds: the base image, and
	# the image SAM derives from it (same repository, tag rapid-ARCH).
	local img
	if [[ -z $DOCKERD_PID ]]; then
		for img in "$OFFLINE_IMAGE" "${OFFLINE_IMAGE%:*}:rapid-$ARCH"; do
			docker image inspect "$img" >/dev/null 2>&1 || CREATED_IMAGES+=("$img")
		done
	fi
	tar -C "$fs" -c . | docker import --change 'WORKDIR /var/task' --change 'ENV LAMBDA_TASK_ROOT=/var/task' \
		--change 'ENV LAMBDA_RUNTIME_DIR=/var/runtime' - "$OFFLINE_IMAGE" >/dev/null
	IMAGE_ARGS=(--invoke-image "$OFFLINE_IMAGE")
	took "built the offline base image $OFFLINE_IMAGE (busybox)"
}

# sam_build builds into $WORK/aws-sam/build, and without SAM's cache: samconfig.toml asks for one, and a
# cached build writes .aws-sam/cache and .aws-sam/deps whatever --build-dir says. .aws-sam/ stays the user's.
SAM_BUILD=$WORK/aws-sam/build
TEMPLATE=$SAM_BUILD/template.yaml
sam_build() {
	(cd "$ROOT" && ARCH=$ARCH sam build --no-cached --build-dir "$SAM_BUILD" --parameter-overrides "Architecture=$ARCH") \
		>"$WORK/sam-build.log" 2>&1 || die "sam build: $(tail -n 5 "$WORK/sam-build.log")"
	took "sam build ($ARCH, into the work directory)"
}

# ---- 4. The services, where the container reaches them -------------------------------------------

gateway() {
	local gw
	gw=$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null || true)
	[[ -n $gw ]] || gw=$(ip -4 -o addr show docker0 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}')
	[[ -n $gw ]] || die "cannot tell the docker bridge's gateway address"
	echo "$gw"
}

# env.local.json names the bucket, table, stream and ports: the servers follow it.
read_env() {
	python3 - "$ROOT/env.local.json" <<'EOF'
import json, sys, urllib.parse
e = json.load(open(sys.argv[1]))["SinkFunction"]
port = lambda v: urllib.parse.urlsplit("//" + v.split("://")[-1]).port
print(e["SINK_BUCKET"], e.get("SINK_PREFIX", ""), e["SINK_STREAM"], e["SINK_TOPICS"], e["SINK_STATE_TABLE"],
      port(e["AWS_ENDPOINT_URL_S3"]), port(e["AWS_ENDPOINT_URL_DYNAMODB"]), port(e["IGGY_ADDRESS"]))
EOF
}

wait_http() { # URL WHAT PID
	local i
	for ((i = 0; i < 300; i++)); do
		curl -s -o /dev/null --max-time 2 "$1" && return 0
		kill -0 "$3" 2>/dev/null || die "$2 exited: $(tail -n 3 "$WORK/$2.log")"
		sleep 0.1
	done
	die "$2 did not answer at $1 within 30 s"
}

port_free() { # HOST PORT
	! ss -Hltn "( sport = :$2 )" | awk '{print $4}' | grep -Eq "^($1|0\.0\.0\.0|\*|\[::\]):$2$"
}

start_services() {
	local p
	for p in "$S3_PORT" "$DDB_PORT" "$IGGY_PORT"; do
		port_free "$GW" "$p" || die "port $p on $GW is taken; env.local.json points the function there"
	done
	MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin MINIO_BROWSER=off MINIO_UPDATE=off \
		"$BIN/minio" server "$WORK/minio" --address "$GW:$S3_PORT" --console-address "127.0.0.1:0" --quiet \
		>"$WORK/minio.log" 2>&1 9>&- &
	PIDS+=($!)
	wait_http "http://$GW:$S3_PORT/minio/health/live" minio $!
	moto_server -H "$GW" -p "$DDB_PORT" >"$WORK/moto.log" 2>&1 9>&- &
	PIDS+=($!)
	wait_http "http://$GW:$DDB_PORT/moto-api/" moto $!
	start_iggy
	took "started MinIO :$S3_PORT, moto_server :$DDB_PORT, $IGGY_WHAT :$IGGY_PORT on $GW"

	aws --endpoint-url "http://$GW:$S3_PORT" s3 mb "s3://$BUCKET" >"$WORK/aws.log" 2>&1 ||
		die "creating the bucket: $(cat "$WORK/aws.log")"
	aws --endpoint-url "http://$GW:$DDB_PORT" dynamodb create-table --table-name "$TABLE" \
		--attribute-definitions AttributeName=pk,AttributeType=S --key-schema AttributeName=pk,KeyType=HASH \
		--billing-mode PAY_PER_REQUEST >"$WORK/aws.log" 2>&1 || die "creating the table: $(cat "$WORK/aws.log")"
	took "created bucket $BUCKET and table $TABLE"
}

# start_iggy starts the in-repo broker on the gateway, or a relay there to IGGY_TEST_ADDRESS (the
# container cannot reach a server on 127.0.0.1).
start_iggy() {
	if [[ -n ${IGGY_TEST_ADDRESS:-} ]]; then
		"$WORK/samlocal" relay -listen "$GW:$IGGY_PORT" -to "$IGGY_TEST_ADDRESS" >>"$WORK/iggy.log" 2>&1 9>&- &
		IGGY_WHAT="the Iggy server at $IGGY_TEST_ADDRESS (relayed)"
	else
		"$WORK/testbroker" -addr "$GW:$IGGY_PORT" -protocol "${IGGY_BROKER_PROTOCOL:-0.9}" >>"$WORK/iggy.log" 2>&1 9>&- &
		IGGY_WHAT="the in-repo Iggy broker (protocol of Iggy ${IGGY_BROKER_PROTOCOL:-0.9})"
	fi
	IGGY_PID=$!
	PIDS+=("$IGGY_PID")
	local i
	for ((i = 0; i < 300; i++)); do
		(exec 3<>"/dev/tcp/$GW/$IGGY_PORT") 2>/dev/null && return 0
		kill -0 "$IGGY_PID" 2>/dev/null || die "the Iggy broker exited: $(tail -n 3 "$WORK/iggy.log")"
		sleep 0.1
	done
	die "Iggy did not listen on $GW:$IGGY_PORT within 30 s"
}

produce() { # WAVE
	"$WORK/samlocal" produce -addr "$GW:$IGGY_PORT" -user "${IGGY_TEST_USERNAME:-iggy}" -password "${IGGY_TEST_PASSWORD:-iggy}" \
		-stream "$STREAM" -topic "$TOPIC" -partitions "$PARTITIONS" -messages "$WAVE_MESSAGES" -wave "$1" \
		-manifest "$WORK/manifest.jsonl" | sed 's/^/sam-local: /'
}

# ---- 5. Invocations -------------------------------------------------------------------------------

invoke_sam() { # OUT ERR
	(cd "$ROOT" && sam local invoke SinkFunction -e events/schedule.json -n "$ENV_FILE" -t "$TEMPLATE" \
		--parameter-overrides "Architecture=$ARCH" --skip-pull-image "${IMAGE_ARGS[@]}" \
		--add-host host.docker.internal:host-gateway) >"$1" 2>"$2" || true # sam's status says nothing
}

invoke_aws() { # OUT ERR
	rm -f "$1"
	(cd "$ROOT" && aws lambda invoke --function-name SinkFunction --endpoint-url "http://127.0.0.1:$LAMBDA_PORT" \
		--cli-read-timeout 300 --payload fileb://events/schedule.json "$1") >"$2" 2>&1 || true
	[[ -e $1 ]] || : >"$1"
}

# drain HOW LABEL: invoke until every partition is at lag 0 with nothing pending; each invocation
# is judged by the function's JSON result.
drain() {
	local how=$1 label=$2 i rc verdict
	local t0
	for ((i = 1; i <= MAX_INVOKES; i++)); do
		t0=$(date +%s.%N)
		"$how" "$WORK/result.json" "$WORK/invoke.log"
		rc=0
		verdict=$("${CHECK[@]}" judge "$WORK/result.json" --partitions "$PARTITIONS") || rc=$?
		say "$label #$i ($(since "$t0")s): $verdict"
		((rc == 0)) && return 0
		if ((rc == 2)); then
			tail -n 15 "$WORK/invoke.log" | sed 's/^/  | /'
			die "$label failed"
		fi
		sleep 2
	done
	die "$label: not drained after $MAX_INVOKES invocations"
}

final_idle() { # HOW LABEL: one more invocation must find nothing to do, at lag 0
	local rc=0 verdict t0
	t0=$(date +%s.%N)
	"$1" "$WORK/result.json" "$WORK/invoke.log"
	verdict=$("${CHECK[@]}" judge "$WORK/result.json" --partitions "$PARTITIONS" --idle) || rc=$?
	say "$2 at lag 0 ($(since "$t0")s): $verdict"
	((rc == 0)) || die "$2: the last invocation was not idle at lag 0"
}

list_objects() {
	aws --endpoint-url "http://$GW:$S3_PORT" s3 ls "s3://$BUCKET/$PREFIX/" --recursive | sed 's/^/sam-local:   /'
}

check_objects() {
	"${CHECK[@]}" check --endpoint "http://$GW:$S3_PORT" --bucket "$BUCKET" --prefix "$PREFIX" \
		--stream "$STREAM" --topic "$TOPIC" --manifest "$WORK/manifest.jsonl" | sed 's/^/sam-local: /'
	return "${PIPESTATUS[0]}"
}

# failed_invocation shows what a failure looks like: with Iggy unreachable (broker or relay stopped), `sam local invoke`
# still exits 0; only the function's JSON result says it failed.
failed_invocation() {
	stop_server "$IGGY_PID"
	local rc=0 status=0 verdict
	(cd "$ROOT" && sam local invoke SinkFunction -e events/schedule.json -n "$ENV_FILE" -t "$TEMPLATE" \
		--parameter-overrides "Architecture=$ARCH" --skip-pull-image "${IMAGE_ARGS[@]}" \
		--add-host host.docker.internal:host-gateway) >"$WORK/result.json" 2>"$WORK/invoke.log" || status=$?
	verdict=$("${CHECK[@]}" judge "$WORK/result.json" --partitions "$PARTITIONS") || rc=$?
	say "sam local invoke with Iggy unreachable: sam exit status $status; $verdict"
	((rc == 2)) || die "an invocation without Iggy was not reported as failed"
	took "a failed invocation is reported as failed"
}

start_lambda() {
	LAMBDA_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	(cd "$ROOT" && exec sam local start-lambda --host 127.0.0.1 --port "$LAMBDA_PORT" -n "$ENV_FILE" -t "$TEMPLATE" \
		--parameter-overrides "Architecture=$ARCH" --skip-pull-image "${IMAGE_ARGS[@]}" \
		--add-host host.docker.internal:host-gateway) >"$WORK/start-lambda.log" 2>&1 9>&- &
	LAMBDA_PID=$!
	PIDS+=("$LAMBDA_PID")
	local i
	for ((i = 0; i < 600; i++)); do
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$LAMBDA_PORT/" && break
		kill -0 "$LAMBDA_PID" 2>/dev/null || die "sam local start-lambda exited: $(tail -n 3 "$WORK/start-lambda.log")"
		sleep 0.1
	done
	took "sam local start-lambda listening on 127.0.0.1:$LAMBDA_PORT"
}

# ---- main -----------------------------------------------------------------------------------------

install_tools
start_engine
GW=$(gateway)
read -r BUCKET PREFIX STREAM TOPIC TABLE S3_PORT DDB_PORT IGGY_PORT < <(read_env)
ENV_FILE=env.local.json
if [[ -n ${IGGY_TEST_ADDRESS:-} ]]; then
	# A long-lived server: a stream of our own (the function's consumer group and objects follow it).
	STREAM=samlocal-$(date +%s)
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); e["SinkFunction"]["SINK_STREAM"]=sys.argv[2]; json.dump(e, open(sys.argv[3], "w"))' \
		"$ROOT/env.local.json" "$STREAM" "$WORK/env.json"
	ENV_FILE=$WORK/env.json
fi
# The function gets these from the shell (SAM passes credentials and region); the SAM CLI itself asks
# STS who it is before every invoke: moto_server answers instead of a 10 s DNS timeout.
export AWS_ACCESS_KEY_ID=minioadmin AWS_SECRET_ACCESS_KEY=minioadmin AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL_STS=http://$GW:$DDB_PORT

base_image
sam_build
start_services

produce 1
drain invoke_sam "sam local invoke"
produce 2
drain invoke_sam "sam local invoke"
final_idle invoke_sam "sam local invoke"
took "sam local invoke drained waves 1-2"
check_objects || die "the objects in MinIO do not hold every message exactly once"
took "independent check of the objects"

start_lambda
produce 3
drain invoke_aws "aws lambda invoke (start-lambda)"
final_idle invoke_aws "aws lambda invoke (start-lambda)"
took "start-lambda drained wave 3"
list_objects
check_objects || die "the objects in MinIO do not hold every message exactly once"
took "independent check of the objects"
stop_server "$LAMBDA_PID" INT
failed_invocation
say "ok: $((3 * PARTITIONS * WAVE_MESSAGES)) messages with headers drained by sam local invoke and start-lambda into MinIO, each exactly once, in order; total $(awk -v a="$(date +%s.%N)" -v b="$T_START" 'BEGIN{printf "%.0f", a-b}') s"
