#!/usr/bin/env bash
# scripts/rabbitmq.sh start|stop|status — RabbitMQ's MQTT plugin as a
# second real test broker, on loopback.
#
# start: installs rabbitmq-server from the Debian package if it is missing,
# writes a config into the state dir (MQTT on
# 127.0.0.1:${HOSTPREP_TEST_RABBITMQ_PORT:-18832}, AMQP on 127.0.0.1:18672,
# anonymous MQTT clients, only the rabbitmq_mqtt plugin), starts one node of
# its own (node hostprep-test@localhost, data, logs and Erlang cookie in the
# state dir, never the package's) and waits until the MQTT port answers.
# stop: stops that node, and epmd when this script started it. Both are
# idempotent; neither touches a rabbitmq-server the system runs itself.
#
# The package's own service is not started (Debian's policy-rc.d may have
# kept it from starting at install; if the install started it, start stops
# it again: it is not ours to leave running).
set -euo pipefail

PORT=${HOSTPREP_TEST_RABBITMQ_PORT:-18832}
AMQP_PORT=${HOSTPREP_TEST_RABBITMQ_AMQP_PORT:-18672}
STATE=${HOSTPREP_RABBITMQ_STATE:-/tmp/hostprep-rabbitmq-$PORT}
BIN=/usr/lib/rabbitmq/bin
PIDFILE=$STATE/rabbitmq.pid
EPMD_OURS=$STATE/epmd-started-by-us
LOG=$STATE/start.log

export HOME=$STATE # the Erlang cookie lives in $HOME/.erlang.cookie
export RABBITMQ_NODENAME=hostprep-test@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$AMQP_PORT
# Erlang distribution's listener. RabbitMQ's default (AMQP + 20000 = 38672)
# lies in net.ipv4.ip_local_port_range (32768-60999 by default): a connection
# that IoTDB or a test opened just before can hold it as its ephemeral local
# port, and the node then dies at boot with eaddrinuse (hostprep's own
# ports.collision check warns of exactly this). Below the range it cannot.
export RABBITMQ_DIST_PORT=${HOSTPREP_TEST_RABBITMQ_DIST_PORT:-$((AMQP_PORT + 1))}
export RABBITMQ_CONFIG_FILE=$STATE/rabbitmq
export RABBITMQ_ENABLED_PLUGINS_FILE=$STATE/enabled_plugins
export RABBITMQ_MNESIA_BASE=$STATE/mnesia
export RABBITMQ_LOG_BASE=$STATE/log
export RABBITMQ_PID_FILE=$PIDFILE
export ERL_EPMD_ADDRESS=127.0.0.1
# Erlang distribution on loopback too (it listens on every address by default).
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export RABBITMQ_CONF_ENV_FILE=$STATE/rabbitmq-env.conf
# A node that dies at boot writes erl_crash.dump into its working directory
# (the checkout, which the test run must leave clean): keep it with the rest.
export ERL_CRASH_DUMP=$STATE/erl_crash.dump

running() {
  [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

port_open() {
  (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null
}

install() {
  [ -x "$BIN/rabbitmq-server" ] && return 0
  echo "== installing rabbitmq-server (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends rabbitmq-server >/dev/null; then
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends rabbitmq-server >/dev/null
  fi
  # The package's service may have been started by the install.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl stop rabbitmq-server >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/rabbitmq-server ]; then
    /etc/init.d/rabbitmq-server stop >/dev/null 2>&1 || true
  fi
}

start() {
  if running; then
    echo "rabbitmq already running (pid $(cat "$PIDFILE"), tcp://127.0.0.1:$PORT)"
    return 0
  fi
  install
  mkdir -p "$STATE"
  : >"$RABBITMQ_CONF_ENV_FILE"
  cat >"$STATE/rabbitmq.conf" <<CONF
# hostprep test broker: loopback only, anonymous MQTT.
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
mqtt.listeners.tcp.1 = 127.0.0.1:$PORT
mqtt.allow_anonymous = true
loopback_users = none
log.file.level = warning
log.console = false
CONF
  echo '[rabbitmq_mqtt].' >"$RABBITMQ_ENABLED_PLUGINS_FILE"
  if [ ! -s "$STATE/.erlang.cookie" ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STATE/.erlang.cookie"
    chmod 0400 "$STATE/.erlang.cookie"
  fi
  # Ask epmd itself (a zombie epmd still matches pgrep): when none
  # answers, the node starts one, and stop takes it down again.
  if ! epmd -names >/dev/null 2>&1; then
    touch "$EPMD_OURS"
  fi
  local attempt
  for attempt in 1 2; do
    launch && return 0
    # The node died at boot (a timeout exits in launch): say why, keep its
    # log beside the next one, and try once more.
    [ "$attempt" = 1 ] || break
    echo "rabbitmq: the node exited at boot ($(why)); log kept in $LOG.1; trying once more" >&2
    mv -f "$LOG" "$LOG.1" 2>/dev/null || true
    [ -s "$PIDFILE" ] && kill -9 -- "-$(cat "$PIDFILE")" 2>/dev/null || true
    sleep 2
  done
  fail "the node exited at boot ($(why))"
}

# launch starts the node and waits for its MQTT port: 0 when it answers,
# 1 when the node died first; after 60 s it fails the script.
launch() {
  rm -f "$PIDFILE"
  setsid "$BIN/rabbitmq-server" >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 600); do
    if port_open; then
      echo "rabbitmq running (pid $(cat "$PIDFILE"), tcp://127.0.0.1:$PORT, $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo '?'))"
      return 0
    fi
    running || return 1
    sleep 0.1
  done
  fail "its MQTT listener did not answer on 127.0.0.1:$PORT within 60 s"
}

# why names the reason the node gave for stopping at boot (RabbitMQ prints
# "exited with reason: ..." or "Error: ..."), shortened to one line.
why() {
  local line
  line=$(grep -m1 -o -E '(exited with reason|[Ee]rror): .*' "$LOG" 2>/dev/null | cut -c1-200)
  echo "${line:-no reason printed}"
}

fail() {
  echo "rabbitmq: $1; log: $LOG, $RABBITMQ_LOG_BASE" >&2
  tail -20 "$LOG" >&2 2>/dev/null || true
  ss -ltnp 2>/dev/null | grep -E ":($PORT|$AMQP_PORT|$RABBITMQ_DIST_PORT|4369)\b" >&2 || true
  stop >/dev/null 2>&1 || true
  exit 1
}

stop() {
  if running; then
    local pid
    pid=$(cat "$PIDFILE")
    "$BIN/rabbitmqctl" -n "$RABBITMQ_NODENAME" shutdown >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    # setsid made the wrapper its process group's leader: the Erlang VM
    # and its helpers are in that group.
    kill -0 "$pid" 2>/dev/null && kill -9 -- "-$pid" 2>/dev/null || true
    echo "rabbitmq stopped (pid $pid)"
  else
    echo "rabbitmq not running"
  fi
  rm -f "$PIDFILE"
  if [ -e "$EPMD_OURS" ]; then
    epmd -kill >/dev/null 2>&1 || true
    rm -f "$EPMD_OURS"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "running (pid $(cat "$PIDFILE"), tcp://127.0.0.1:$PORT)"; else echo "stopped"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
