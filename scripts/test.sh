#!/usr/bin/env bash
# The README's test command: installs and starts what the tests need
# (mosquitto from Debian, IoTDB from Maven Central) on loopback, runs the
# whole suite with the race detector, and stops the services again.
# Run as root on a fresh Debian 12 machine; running it twice is harmless.
set -euo pipefail
cd "$(dirname "$0")/.."

export HOSTPREP_TEST_MQTT_PORT=${HOSTPREP_TEST_MQTT_PORT:-18831}
export HOSTPREP_TEST_IOTDB_PORT=${HOSTPREP_TEST_IOTDB_PORT:-6667}

cleanup() {
  scripts/mosquitto.sh stop || true
  scripts/iotdb.sh stop || true
}
trap cleanup EXIT

echo "== go toolchain: $(go version)"
# Tools the tests call: ansible-playbook (examples/ syntax check),
# unshare and ip (tune sandbox), systemd-analyze (examples/ unit check).
need_pkgs=()
command -v ansible-playbook >/dev/null || need_pkgs+=(ansible-core)
command -v unshare >/dev/null || need_pkgs+=(util-linux)
command -v ip >/dev/null || need_pkgs+=(iproute2)
command -v systemd-analyze >/dev/null || need_pkgs+=(systemd)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "== apt-get install ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
scripts/mosquitto.sh start
export HOSTPREP_TEST_MQTT="tcp://127.0.0.1:${HOSTPREP_TEST_MQTT_PORT}"
scripts/iotdb.sh start
export HOSTPREP_TEST_IOTDB="127.0.0.1:${HOSTPREP_TEST_IOTDB_PORT}"

echo "== gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
go vet ./...

echo "== go test -race ./..."
go test -race -count=1 -timeout 40m ./... "$@"
