#!/usr/bin/env bash
# scripts/iotdb.sh start|stop|status — a real Apache IoTDB (one ConfigNode,
# one DataNode) on 127.0.0.1 for hostprep's tests.
#
# Fetch: Maven Central, with mvn only, once into a cache directory:
#   org.apache.iotdb:iotdb-confignode:VERSION:zip and
#   org.apache.iotdb:iotdb-server:VERSION:zip   (conf/, lib/, sbin/)
# If a release's zips are missing, its jars are fetched instead through the
# throwaway pom in scripts/iotdb/pom.xml (mvn dependency:copy-dependencies).
# Either way the nodes are started the way IoTDB's sbin/start-*.sh start them
# (same main classes, system properties and --add-opens), but with small
# heaps, a generated iotdb-system.properties and every data/log directory
# under a state directory.
#
# Environment (all optional):
#   HOSTPREP_TEST_IOTDB_PORT  DataNode client RPC port (default 6667)
#   HOSTPREP_IOTDB_VERSION    IoTDB release (default 2.0.10: newest on Maven
#                             Central that the Go client v1.3.7 talks to)
#   HOSTPREP_CACHE            cache root (default ~/.cache/hostprep)
#   HOSTPREP_IOTDB_STATE      data, logs, pidfiles (default /tmp/hostprep-iotdb-PORT)
#   HOSTPREP_IOTDB_CN_HEAP / HOSTPREP_IOTDB_DN_HEAP  heaps (default 512m / 1g)
#   HOSTPREP_IOTDB_START_TIMEOUT  seconds to wait for a session (default 180)
#   MAVEN_REPO_LOCAL          mvn local repository (default ~/.m2/repository)
#   HOSTPREP_IOTDB_FETCH      zip (default: the zips, jars if they are missing)
#                             or jars (skip the zips; tests the fallback)
#
# start is idempotent (a running, answering IoTDB is left alone); stop kills
# both nodes by pidfile and waits for them. On failure the reason and the
# node logs are printed and the exit code is non-zero: CI fails, never skips.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

VERSION=${HOSTPREP_IOTDB_VERSION:-2.0.10}
PORT=${HOSTPREP_TEST_IOTDB_PORT:-6667}
CACHE_ROOT=${HOSTPREP_CACHE:-$HOME/.cache/hostprep}
DIST=$CACHE_ROOT/iotdb-$VERSION
STATE=${HOSTPREP_IOTDB_STATE:-/tmp/hostprep-iotdb-$PORT}
CN_HEAP=${HOSTPREP_IOTDB_CN_HEAP:-512m}
DN_HEAP=${HOSTPREP_IOTDB_DN_HEAP:-1g}
DN_DIRECT=${HOSTPREP_IOTDB_DN_DIRECT:-512m}
TIMEOUT=${HOSTPREP_IOTDB_START_TIMEOUT:-180}
M2=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}

# Internal ports: IoTDB's defaults. Only the client RPC port is configurable.
CN_INTERNAL_PORT=10710
CN_CONSENSUS_PORT=10720
DN_INTERNAL_PORT=10730
DN_MPP_PORT=10740
DN_SCHEMA_CONSENSUS_PORT=10750
DN_DATA_CONSENSUS_PORT=10760

log() { echo "iotdb.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# mvnq runs mvn quietly inside the scratch directory $MVN_CWD. Without a
# project of its own (dependency:unpack) Maven resolves
# ${project.build.directory} to the literal "${project.basedir}/target" under
# the working directory and writes its plugin markers there (the unpack
# goal's markersDirectory has no user property to move it), so mvn must not
# run in the checkout.
mvnq() { (cd "$MVN_CWD" && mvn -q -B -Dmaven.repo.local="$M2" "$@"); }

# fetch makes $DIST/{confignode,datanode}/lib (+conf from the zips) once.
fetch() {
  if [ -f "$DIST/.complete" ]; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven) to fetch IoTDB $VERSION"
  command -v java >/dev/null || die "java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)"
  local t0=$SECONDS tmp
  rm -rf "$DIST"
  tmp="$DIST.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  MVN_CWD=$(mktemp -d "${TMPDIR:-/tmp}/hostprep-mvn.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$MVN_CWD'" EXIT
  log "fetching IoTDB $VERSION (ConfigNode and DataNode zips) with mvn into $DIST"
  if [ "${HOSTPREP_IOTDB_FETCH:-zip}" != jars ] &&
     mvnq dependency:unpack -Dartifact="org.apache.iotdb:iotdb-confignode:$VERSION:zip" \
        -DoutputDirectory="$tmp/confignode" >"$tmp/mvn-cn.log" 2>&1 &&
     mvnq dependency:unpack -Dartifact="org.apache.iotdb:iotdb-server:$VERSION:zip" \
        -DoutputDirectory="$tmp/datanode" >"$tmp/mvn-dn.log" 2>&1 &&
     [ -d "$tmp/confignode/lib" ] && [ -d "$tmp/datanode/lib" ]; then
    echo zip >"$tmp/.source"
  else
    log "the $VERSION zips could not be fetched (see below); falling back to the jars via scripts/iotdb/pom.xml"
    tail -n 5 "$tmp"/mvn-*.log >&2 2>/dev/null || true
    rm -rf "$tmp/confignode" "$tmp/datanode"
    mkdir -p "$tmp/lib"
    # A copy of the pom in the scratch directory, so its target/ lands
    # there and not under scripts/iotdb/.
    cp "$here/iotdb/pom.xml" "$MVN_CWD/pom.xml"
    if ! mvnq -f "$MVN_CWD/pom.xml" -Diotdb.version="$VERSION" \
          dependency:copy-dependencies -DincludeScope=runtime \
          -DoutputDirectory="$tmp/lib" >"$tmp/mvn-jars.log" 2>&1; then
      cat "$tmp/mvn-jars.log" >&2
      rm -rf "$tmp"
      die "could not fetch IoTDB $VERSION from Maven Central, neither the zips nor the jars (log above); check that mvn reaches the registry, or set HOSTPREP_IOTDB_VERSION"
    fi
    mkdir -p "$tmp/confignode" "$tmp/datanode"
    ln -s ../lib "$tmp/confignode/lib"
    ln -s ../lib "$tmp/datanode/lib"
    echo jars >"$tmp/.source"
  fi
  touch "$tmp/.complete"
  mv "$tmp" "$DIST"
  log "fetched IoTDB $VERSION ($(cat "$DIST/.source")) in $((SECONDS - t0)) s"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# write_conf writes the one iotdb-system.properties both nodes read.
write_conf() {
  local conf=$STATE/conf
  mkdir -p "$conf"
  cat >"$conf/iotdb-system.properties" <<EOF
# Generated by hostprep scripts/iotdb.sh: one ConfigNode + one DataNode on loopback.
cluster_name=hostprep
cn_seed_config_node=127.0.0.1:$CN_INTERNAL_PORT
dn_seed_config_node=127.0.0.1:$CN_INTERNAL_PORT
cn_internal_address=127.0.0.1
cn_internal_port=$CN_INTERNAL_PORT
cn_consensus_port=$CN_CONSENSUS_PORT
dn_rpc_address=127.0.0.1
dn_rpc_port=$PORT
dn_internal_address=127.0.0.1
dn_internal_port=$DN_INTERNAL_PORT
dn_mpp_data_exchange_port=$DN_MPP_PORT
dn_schema_region_consensus_port=$DN_SCHEMA_CONSENSUS_PORT
dn_data_region_consensus_port=$DN_DATA_CONSENSUS_PORT
schema_replication_factor=1
data_replication_factor=1
cn_system_dir=$STATE/confignode/data/system
cn_consensus_dir=$STATE/confignode/data/consensus
cn_pipe_receiver_file_dir=$STATE/confignode/data/pipe/receiver
dn_system_dir=$STATE/datanode/data/system
dn_data_dirs=$STATE/datanode/data/data
dn_consensus_dir=$STATE/datanode/data/consensus
dn_wal_dirs=$STATE/datanode/data/wal
dn_tracing_dir=$STATE/datanode/data/tracing
dn_sync_dir=$STATE/datanode/data/sync
cn_metric_reporter_list=
dn_metric_reporter_list=
EOF
  # One log file per node, in the state directory (the zips' logback files
  # write many files under the install directory).
  local node
  for node in confignode datanode; do
    cat >"$conf/logback-$node.xml" <<EOF
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$STATE/$node.log</file>
    <encoder><pattern>%d [%t] %-5p %c{0}:%L - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
  done
}

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; else echo java; fi
}

ADD_OPENS="--add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED"

# launch NODE: starts one node in the background, as sbin/start-NODE.sh -d.
launch() {
  local node=$1 home=$STATE/$1 cp="" f java
  java=$(java_bin)
  mkdir -p "$home"
  for f in "$DIST/$node/lib/"*.jar; do cp="$cp:$f"; done
  cp=${cp#:}
  # shellcheck disable=SC2086
  case $node in
  confignode)
    nohup "$java" $ADD_OPENS -Xms"$CN_HEAP" -Xmx"$CN_HEAP" -XX:MaxDirectMemorySize=256m \
      -Dlogback.configurationFile="$STATE/conf/logback-confignode.xml" \
      -DCONFIGNODE_HOME="$home" -DCONFIGNODE_DATA_HOME="$home" -DTSFILE_HOME="$home" \
      -DCONFIGNODE_CONF="$STATE/conf" -DTSFILE_CONF="$STATE/conf" -Dname=iotdb.ConfigNode \
      -DCONFIGNODE_LOGS="$home/logs" -Diotdb-foreground=yes \
      -cp "$cp" org.apache.iotdb.confignode.service.ConfigNode -s \
      >"$STATE/confignode.out" 2>&1 </dev/null &
    ;;
  datanode)
    nohup "$java" $ADD_OPENS -Xms"$DN_HEAP" -Xmx"$DN_HEAP" -XX:MaxDirectMemorySize="$DN_DIRECT" \
      -Dlogback.configurationFile="$STATE/conf/logback-datanode.xml" \
      -DIOTDB_HOME="$home" -DIOTDB_DATA_HOME="$home" -DTSFILE_HOME="$home" \
      -DIOTDB_CONF="$STATE/conf" -DTSFILE_CONF="$STATE/conf" -Dname=iotdb.IoTDB \
      -DIOTDB_LOG_DIR="$home/logs" -DOFF_HEAP_MEMORY="$DN_DIRECT" -Diotdb-foreground=yes \
      -Dsun.jnu.encoding=UTF-8 -Dfile.encoding=UTF-8 \
      -cp "$cp" org.apache.iotdb.db.service.DataNode -s \
      >"$STATE/datanode.out" 2>&1 </dev/null &
    ;;
  esac
  echo $! >"$STATE/$node.pid"
}

show_logs() {
  local f
  for f in "$STATE"/confignode.out "$STATE"/confignode.log "$STATE"/datanode.out "$STATE"/datanode.log; do
    [ -s "$f" ] || continue
    echo "----- last lines of $f" >&2
    grep -v '^\s*at ' "$f" | tail -n 40 >&2 || true
  done
}

fail_start() {
  log "$*"
  show_logs
  stop_nodes
  exit 1
}

# session_ok opens a real client session (Go client v1.3.7) and runs
# `show version`; prints the version.
session_ok() {
  (cd "$repo" && go run ./internal/iotdbping -addr "127.0.0.1:$PORT" -timeout 10s) 2>>"$STATE/ping.err"
}

running() { pid_alive "$STATE/confignode.pid" && pid_alive "$STATE/datanode.pid"; }

start() {
  if running && port_open "$PORT" && v=$(session_ok); then
    log "IoTDB $v already running on 127.0.0.1:$PORT (state $STATE)"
    return 0
  fi
  stop_nodes
  if port_open "$PORT"; then
    die "port $PORT on 127.0.0.1 is taken by another process (not ours: no pidfile in $STATE); stop it or set HOSTPREP_TEST_IOTDB_PORT"
  fi
  local p
  for p in $CN_INTERNAL_PORT $CN_CONSENSUS_PORT $DN_INTERNAL_PORT $DN_MPP_PORT $DN_SCHEMA_CONSENSUS_PORT $DN_DATA_CONSENSUS_PORT; do
    if port_open "$p"; then die "IoTDB internal port $p on 127.0.0.1 is taken by another process; stop it (IoTDB needs 10710-10760)"; fi
  done
  fetch
  local t0=$SECONDS
  rm -rf "$STATE"
  mkdir -p "$STATE"
  write_conf
  : >"$STATE/ping.err"
  # Compile the session check while the JVMs start.
  (cd "$repo" && go build -o /dev/null ./internal/iotdbping) 2>>"$STATE/ping.err" &
  local build=$!
  launch confignode
  local deadline=$((SECONDS + TIMEOUT))
  until port_open $CN_INTERNAL_PORT; do
    pid_alive "$STATE/confignode.pid" || fail_start "the ConfigNode exited during start-up"
    [ $SECONDS -lt $deadline ] || fail_start "the ConfigNode did not open port $CN_INTERNAL_PORT within ${TIMEOUT} s"
    sleep 1
  done
  launch datanode
  until port_open "$PORT"; do
    pid_alive "$STATE/confignode.pid" || fail_start "the ConfigNode exited during start-up"
    pid_alive "$STATE/datanode.pid" || fail_start "the DataNode exited during start-up"
    [ $SECONDS -lt $deadline ] || fail_start "the DataNode did not open port $PORT within ${TIMEOUT} s"
    sleep 1
  done
  wait "$build" || true
  local v=""
  until v=$(session_ok); do
    pid_alive "$STATE/datanode.pid" || fail_start "the DataNode exited during start-up"
    [ $SECONDS -lt $deadline ] || { cat "$STATE/ping.err" >&2; fail_start "port $PORT is open but no session could be opened within ${TIMEOUT} s"; }
    sleep 2
  done
  log "IoTDB $v ($(cat "$DIST/.source") from Maven Central) up on 127.0.0.1:$PORT in $((SECONDS - t0)) s; state and logs in $STATE"
}

# stop_nodes kills what our pidfiles name (DataNode first) and waits.
stop_nodes() {
  local node pf pid i
  for node in datanode confignode; do
    pf=$STATE/$node.pid
    [ -f "$pf" ] || continue
    pid=$(cat "$pf")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for i in $(seq 1 60); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
      done
      if kill -0 "$pid" 2>/dev/null; then
        log "$node (pid $pid) did not stop within 30 s; killing it"
        kill -9 "$pid" 2>/dev/null || true
        sleep 0.5
      fi
    fi
    rm -f "$pf"
  done
}

case ${1:-} in
start) start ;;
stop)
  stop_nodes
  # Drop the data; keep the node logs for a look after a failed run.
  rm -rf "$STATE/confignode" "$STATE/datanode" "$STATE/conf"
  log "stopped; logs kept in $STATE"
  ;;
status)
  if running && port_open "$PORT"; then echo "running on 127.0.0.1:$PORT"; else echo "not running"; exit 1; fi
  ;;
fetch) fetch ;;
*) echo "usage: $0 start|stop|status|fetch" >&2; exit 2 ;;
esac
