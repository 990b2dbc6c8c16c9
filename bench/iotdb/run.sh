#!/usr/bin/env bash
# bench/iotdb/run.sh — `hostprep probe iotdb` side by side with a plain loop
# over IoTDB's official Java SessionPool (SessionPoolBench.java), same server,
# same operation, same steps, alternating runs.
#
# Per scenario and step it prints, for each run and as the median over the
# runs: TPS, p50/p95 (ms) and client CPU per operation (µs) of both clients
# and the TPS ratio hostprep/Java (>= 1.0: the probe is not the bottleneck);
# each run's line ends with the client path the probe chose (client.path).
# A run is the two clients back to back, so its ratio compares them on the
# server as it was then; the "med" row's ratio is the median of the runs'
# ratios (the server drifts between runs: its JIT, compactions), and the
# ratio of the two TPS medians follows on a line of its own. After each
# scenario's steps one summary line gives the lowest paired-median ratio
# over the steps and the step where it occurs (the issue's target: >= 1.0
# at every step), and the lowest single run's ratio.
#
# The Java client is built from the jars in lib/ of the IoTDB distribution
# scripts/iotdb.sh fetches (iotdb-session and its dependencies; nothing new
# is downloaded); it needs javac (Java 17), installed with
# `apt-get install openjdk-17-jdk-headless` if missing.
#
# Environment (all optional):
#   HOSTPREP_TEST_IOTDB   host:port of the IoTDB to load (default: start
#                         scripts/iotdb.sh and stop it afterwards)
#   HOSTPREP_IOTDB_PASSWORD  root's password (default root)
#   SCENARIOS  scenarios (default "write batch mixed")
#   STEPS      worker counts (default "1 8 16 32 64")
#   DURATION   seconds per measured step (default 8)
#   WARMUP     unmeasured seconds before each step (default 5: the JVM's JIT)
#   REPS       alternating runs per step (default 3)
#   POOL       SessionPool size of both clients (default: the step's workers)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
VERSION=${HOSTPREP_IOTDB_VERSION:-2.0.10}
CACHE_ROOT=${HOSTPREP_CACHE:-$HOME/.cache/hostprep}
LIB=$CACHE_ROOT/iotdb-$VERSION/datanode/lib
SCENARIOS=${SCENARIOS:-write batch mixed}
STEPS=${STEPS:-1 8 16 32 64}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-5}
REPS=${REPS:-3}
PASSWORD=${HOSTPREP_IOTDB_PASSWORD:-root}
out=$repo/.cache/bench-iotdb
mkdir -p "$out"

started=""
if [[ -z "${HOSTPREP_TEST_IOTDB:-}" ]]; then
	"$repo/scripts/iotdb.sh" start >&2
	started=1
	HOSTPREP_TEST_IOTDB=127.0.0.1:${HOSTPREP_TEST_IOTDB_PORT:-6667}
fi
cleanup() { if [[ -n "$started" ]]; then "$repo/scripts/iotdb.sh" stop >&2 || true; fi; }
trap cleanup EXIT
host=${HOSTPREP_TEST_IOTDB%:*}
port=${HOSTPREP_TEST_IOTDB##*:}

[[ -d "$LIB" ]] || { echo "run.sh: no IoTDB distribution at $LIB: run scripts/iotdb.sh start once" >&2; exit 3; }
command -v javac >/dev/null || { echo "run.sh: javac not found: apt-get install openjdk-17-jdk-headless" >&2; exit 3; }
command -v jq >/dev/null || { echo "run.sh: jq not found: apt-get install jq" >&2; exit 3; }

echo "building the Java SessionPool loop and hostprep into $out" >&2
javac -nowarn -cp "$LIB/*" -d "$out" "$here/SessionPoolBench.java"
(cd "$repo" && go build -o "$out/hostprep" ./cmd/hostprep)

# java_run SCENARIO WORKERS POOL -> "tps p50 p95 cpu_per_op_us"
java_run() {
	java -Xmx1g -cp "$out:$LIB/*" SessionPoolBench "$host" "$port" root "$PASSWORD" "$1" "$2" "$DURATION" "$WARMUP" "$3" 2>/dev/null |
		awk '/^java /{for(i=2;i<=NF;i++){split($i,kv,"=");v[kv[1]]=kv[2]} print v["tps"], v["p50_ms"], v["p95_ms"], v["cpu_per_op_us"], v["errors"]}' || true
}

# probe_run SCENARIO WORKERS POOL -> "tps p50 p95 cpu_per_op_us errors client_path"
probe_run() {
	HOSTPREP_IOTDB_PASSWORD=$PASSWORD "$out/hostprep" probe iotdb --host "$host" --port "$port" --scenario "$1" \
		--steps "$2" --step-duration "${DURATION}s" --warmup "${WARMUP}s" --pool-size "$3" --max-error-rate 1 -o json 2>/dev/null |
		jq -r '.steps[0] | "\(.tps) \(.latency.p50_ms) \(.latency.p95_ms) \(.client.cpu_per_op_us) \(.errors) \(.client.path)"' || true
}

# plural N NOUN -> "1 worker", "8 workers"
plural() { if [[ "$1" == 1 ]]; then echo "1 $2"; else echo "$1 ${2}s"; fi; }

median() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print 0}else if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }

printf '%-8s %7s %4s | %10s %8s %8s %9s | %10s %8s %8s %9s | %6s\n' scenario workers run \
	"java TPS" "p50 ms" "p95 ms" "CPU µs/op" "probe TPS" "p50 ms" "p95 ms" "CPU µs/op" ratio
for sc in $SCENARIOS; do
	low="" lowAt="" lowRun="" lowRunAt=""
	for n in $STEPS; do
		pool=${POOL:-$n}
		: >"$out/j.txt"
		: >"$out/p.txt"
		: >"$out/r.txt"
		for ((r = 1; r <= REPS; r++)); do
			# Alternate which client goes first, so drift of the shared
			# server (compaction, GC) does not favour one of them.
			if ((r % 2)); then
				j=$(java_run "$sc" "$n" "$pool"); p=$(probe_run "$sc" "$n" "$pool")
			else
				p=$(probe_run "$sc" "$n" "$pool"); j=$(java_run "$sc" "$n" "$pool")
			fi
			echo "$j" >>"$out/j.txt"
			echo "$p" >>"$out/p.txt"
			read -r jt j50 j95 jc _ <<<"$j"
			read -r pt p50 p95 pc _ ppath <<<"$p"
			ratio=$(awk -v a="${pt:-0}" -v b="${jt:-0}" 'BEGIN{print (b>0)?a/b:0}')
			# A run where either client failed (no TPS: the server refused
			# it) compares nothing: left out of the medians and the lowest.
			if awk -v a="${pt:-0}" -v b="${jt:-0}" 'BEGIN{exit !(a>0 && b>0)}'; then
				echo "$ratio" >>"$out/r.txt"
				if [[ -z "$lowRun" ]] || awk -v a="$ratio" -v b="$lowRun" 'BEGIN{exit !(a<b)}'; then
					lowRun=$ratio lowRunAt="$(plural "$n" worker), run $r"
				fi
			fi
			printf '%-8s %7d %4d | %10.0f %8.2f %8.2f %9.1f | %10.0f %8.2f %8.2f %9.1f | %6.2f  %s\n' "$sc" "$n" "$r" \
				"${jt:-0}" "${j50:-0}" "${j95:-0}" "${jc:-0}" "${pt:-0}" "${p50:-0}" "${p95:-0}" "${pc:-0}" "$ratio" "${ppath:-}"
		done
		med=$(median <"$out/r.txt")
		col() { awk -v c="$2" '{print $c}' "$1" | median; }
		jt=$(col "$out/j.txt" 1); pt=$(col "$out/p.txt" 1)
		printf '%-8s %7d %4s | %10.0f %8.2f %8.2f %9.1f | %10.0f %8.2f %8.2f %9.1f | %6.2f\n' "$sc" "$n" med \
			"$jt" "$(col "$out/j.txt" 2)" "$(col "$out/j.txt" 3)" "$(col "$out/j.txt" 4)" \
			"$pt" "$(col "$out/p.txt" 2)" "$(col "$out/p.txt" 3)" "$(col "$out/p.txt" 4)" \
			"$med"
		if [[ -z "$low" ]] || awk -v a="$med" -v b="$low" 'BEGIN{exit !(a<b)}'; then
			low=$med lowAt=$n
		fi
		printf '%-8s %7d      ratio of the TPS medians: %.2f\n' "$sc" "$n" "$(awk -v a="$pt" -v b="$jt" 'BEGIN{print (b>0)?a/b:0}')"
	done
	printf '%-8s lowest paired-median ratio %.2f at %s (steps: %s); lowest single run %.2f (%s)\n' \
		"$sc" "$low" "$(plural "$lowAt" worker)" "$STEPS" "$lowRun" "$lowRunAt"
done
