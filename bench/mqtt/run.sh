#!/usr/bin/env bash
# bench/mqtt/run.sh — the MQTT probe's efficiency figures against mosquitto
# on loopback: per-connection RSS and goroutines (hostprep vs
# paho.mqtt.golang), CPU per message of probe and broker, the highest
# zero-loss rate, and holding 15,000 connections. Extra arguments go to the
# benchmark program (go run ./bench/mqtt -h lists them).
#
# Needs root-free loopback only; RLIMIT_NOFILE must allow ~15,100 fds for
# the probe and for mosquitto (separate processes, each under its limit).
#
# The broker is the benchmark's own (port $HOSTPREP_BENCH_MQTT_PORT, default
# 18841), not the tests' shared one on 18831: other clients would add to the
# broker CPU it measures, and the pinned variant moves the broker to CPU 1
# while it runs (restored after).
set -euo pipefail
cd "$(dirname "$0")/../.."
export HOSTPREP_TEST_MQTT_PORT=${HOSTPREP_BENCH_MQTT_PORT:-18841}
started=
if ! scripts/mosquitto.sh status >/dev/null 2>&1; then
  scripts/mosquitto.sh start
  started=1
fi
trap '[ -n "$started" ] && scripts/mosquitto.sh stop' EXIT
ulimit -n "$(ulimit -Hn)"
pidfile=/tmp/hostprep-mosquitto-${HOSTPREP_TEST_MQTT_PORT}/mosquitto.pid
go build -o /tmp/hostprep-mqtt-bench ./bench/mqtt
/tmp/hostprep-mqtt-bench -broker "tcp://127.0.0.1:${HOSTPREP_TEST_MQTT_PORT}" -broker-pid "$(cat "$pidfile")" "$@"
