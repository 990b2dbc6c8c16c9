#!/usr/bin/env bash
# scripts/mosquitto.sh start|stop|status — the test broker on loopback.
#
# start: installs mosquitto from the Debian package if it is missing, writes
# a config for a load test (127.0.0.1:${HOSTPREP_TEST_MQTT_PORT:-18831},
# anonymous clients, unlimited connections, no persistence) into the state
# dir, starts it as a daemon with a pidfile and waits until the port answers.
# stop: kills the daemon named by the pidfile. Both are idempotent.
#
# The package's own init script may start a system mosquitto on port 1883;
# start stops that one again (it is not ours to leave running). mosquitto
# inherits this shell's RLIMIT_NOFILE: raise the soft limit to the hard one.
set -euo pipefail

PORT=${HOSTPREP_TEST_MQTT_PORT:-18831}
STATE=${HOSTPREP_MQTT_STATE:-/tmp/hostprep-mosquitto-$PORT}
PIDFILE=$STATE/mosquitto.pid
CONF=$STATE/mosquitto.conf
LOG=$STATE/mosquitto.log

running() {
  [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

port_open() {
  (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null
}

install() {
  command -v mosquitto >/dev/null 2>&1 && return 0
  [ -x /usr/sbin/mosquitto ] && return 0
  echo "== installing mosquitto (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q mosquitto >/dev/null; then
    apt-get update -q >/dev/null
    apt-get install -y -q mosquitto >/dev/null
  fi
  # The package's init script may have started the system broker on 1883.
  if [ -x /etc/init.d/mosquitto ]; then /etc/init.d/mosquitto stop >/dev/null 2>&1 || true; fi
}

start() {
  if running; then
    echo "mosquitto already running (pid $(cat "$PIDFILE"), port $PORT)"
    return 0
  fi
  install
  local bin
  bin=$(command -v mosquitto || echo /usr/sbin/mosquitto)
  mkdir -p "$STATE"
  chmod 0777 "$STATE" # mosquitto drops to user mosquitto when started as root
  cat >"$CONF" <<CONF
# hostprep test broker: loopback only, anonymous, unlimited connections.
per_listener_settings false
allow_anonymous true
persistence false
pid_file $PIDFILE
log_dest file $LOG
log_type error
log_type warning
connection_messages false
max_inflight_messages 1000
max_queued_messages 100000
max_queued_bytes 0
listener $PORT 127.0.0.1
max_connections -1
CONF
  ulimit -n "$(ulimit -Hn)" || true
  rm -f "$PIDFILE"
  "$bin" -c "$CONF" -d
  for _ in $(seq 1 100); do
    if port_open; then
      echo "mosquitto running (pid $(cat "$PIDFILE" 2>/dev/null || echo ?), tcp://127.0.0.1:$PORT, nofile $(ulimit -n))"
      return 0
    fi
    sleep 0.1
  done
  echo "mosquitto did not answer on 127.0.0.1:$PORT within 10 s; log: $LOG" >&2
  cat "$LOG" >&2 2>/dev/null || true
  exit 1
}

stop() {
  if running; then
    local pid
    pid=$(cat "$PIDFILE")
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    echo "mosquitto stopped (pid $pid)"
  else
    echo "mosquitto not running"
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "running (pid $(cat "$PIDFILE"))"; else echo "stopped"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
