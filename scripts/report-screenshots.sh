#!/usr/bin/env bash
# scripts/report-screenshots.sh — regenerate the report screenshots in
# docs/reports/ (one per report type: probe mqtt, probe iotdb, ready,
# report merge) with Debian's headless Chromium (apt-get install chromium).
#
# The MQTT probe and the ready dry run use the embedded broker; the IoTDB
# probe needs a DataNode at $HOSTPREP_TEST_IOTDB (default 127.0.0.1:6667,
# see scripts/iotdb.sh); the merged page joins report/testdata and a
# three-shard fleet run against the broker at $HOSTPREP_TEST_MQTT (default
# tcp://127.0.0.1:18831, see scripts/mosquitto.sh).
# Look at every PNG before committing it. The MQTT report is also shot
# at 800 px (docs/reports/mqtt-800.png).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/reports
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/hostprep" ./cmd/hostprep
hp=$work/hostprep
iotdb=${HOSTPREP_TEST_IOTDB:-127.0.0.1:6667}
# Exit 1 (a threshold failed on a busy machine) still makes a report.
"$hp" probe mqtt --clients 200 --conn-rate 50/s --qos 1 --pub-interval 200ms --duration 15s --html "$work/mqtt.html" >/dev/null || [ $? -eq 1 ]
"$hp" probe iotdb --host "${iotdb%:*}" --port "${iotdb##*:}" --steps 2,4,8,16 --step-duration 5s --pool-size 8 --html "$work/iotdb.html" >/dev/null || [ $? -eq 1 ]
"$hp" ready --profile ready-small --dry-run --html "$work/ready.html" >/dev/null || [ $? -eq 1 ]
start=$(date -u -d '+6 seconds' +%Y-%m-%dT%H:%M:%SZ)
for k in 1 2 3; do
	"$hp" probe mqtt --broker "${HOSTPREP_TEST_MQTT:-tcp://127.0.0.1:18831}" --clients 90 --conn-rate 45/s --qos 1 --pub-interval 500ms \
		--duration 12s --shard "$k/3" --start-at "$start" --max-clock-error 0 --source-ips "127.0.0.$((k + 1))" -o json >"$work/shard$k.json" 2>/dev/null &
done
wait
"$hp" report merge --html "$work/merge.html" "$work"/shard?.json report/testdata/lg-05-full.json report/testdata/lg-0[123].json >/dev/null || [ $? -eq 1 ]
mkdir -p "$out"
# 1400 px wide, a laptop; the MQTT report also at 800 px, a narrow window.
# Look at each: no sideways scroll, every legend readable.
shot() { # shot NAME WIDTH PNG
	chromium --headless --no-sandbox --hide-scrollbars --window-size="$2,2300" \
		--screenshot="$3" "file://$work/$1.html" 2>/dev/null
	echo "$3"
}
for r in mqtt iotdb ready merge; do
	shot "$r" 1400 "$out/$r.png"
done
shot mqtt 800 "$out/mqtt-800.png"
# KEEP=DIR keeps the HTML pages there, to open in a browser.
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP" && cp "$work"/*.html "$KEEP"/
fi
