#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Records the embedded-style traces in data/traces/embedded/ (their provenance:
# data/traces/embedded/README.md). Run by hand from the repository root, as root
# on Debian 12; `make test` only reads what it wrote.
#
#   tools/record_traces.sh mqtt       an MQTT broker (Debian's mosquitto) on 127.0.0.1
#                                     under a bounded sensor-network load:
#                                     mqtt-broker.hkt.gz (heapkit trace, LD_PRELOAD)
#   tools/record_traces.sh firmware   the firmware-trace example (FreeRTOS, the
#                                     recorder in ports/trace/) in QEMU on both targets:
#                                     freertos-cm3.hkfw.gz, freertos-rv32.hkfw.gz
#   tools/record_traces.sh itc        the fctma-pools ITC firmware on the kernel with
#                                     the recorder: itc-kernel.hkfw.gz
#
# MQTT_SECONDS (default 120) bounds the broker's run; FW_ROUNDS (default 4000) the
# firmware's messages.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/data/traces/embedded
heapkit=$root/.venv/bin/heapkit
mkdir -p "$out"

mqtt() {
  command -v mosquitto >/dev/null || apt-get install -y --no-install-recommends mosquitto mosquitto-clients
  local seconds=${MQTT_SECONDS:-120} port=18883 tmp
  tmp=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' RETURN
  # "user root": as root, mosquitto would otherwise drop to its own user, and the recorder could
  # no longer write the trace's sidecar files at exit.
  printf 'user root\nlistener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 2000\n' \
    "$port" >"$tmp/mosquitto.conf"
  "$heapkit" trace -o "$tmp/mqtt-broker.hkt.gz" -- mosquitto -c "$tmp/mosquitto.conf" &
  local broker=$!
  sleep 2
  local sub=(mosquitto_sub -h 127.0.0.1 -p "$port")
  local pub=(mosquitto_pub -h 127.0.0.1 -p "$port")
  # Long-lived subscribers: a dashboard on everything, an alarm panel, and a logger with a
  # persistent session that goes away and comes back, so messages queue for it meanwhile.
  "${sub[@]}" -i dashboard -q 1 -t 'plant/#' >/dev/null &
  "${sub[@]}" -i alarms -q 1 -t 'plant/+/alarm' >/dev/null &
  ( for _ in $(seq $((seconds / 10))); do
      timeout 6 "${sub[@]}" -i logger -c -q 1 -t 'plant/+/temp' >/dev/null || true
      sleep 4
    done ) &
  # Eight sensors on long-lived connections: small readings, every 20th an alarm with a
  # longer report, every 50th a retained status.
  for s in $(seq 1 8); do
    ( i=0; end=$((SECONDS + seconds))
      while [ $SECONDS -lt $end ]; do
        i=$((i + 1))
        echo "{\"sensor\":$s,\"seq\":$i,\"t\":$((200 + (i * 7 + s * 13) % 150))}"
        sleep 0.0$((2 + s % 5))
      done ) | "${pub[@]}" -i "sensor$s" -q $((s % 2)) -t "plant/$s/temp" -l &
    ( end=$((SECONDS + seconds)); i=0
      while [ $SECONDS -lt $end ]; do
        i=$((i + 1))
        sleep 1.$((s % 7))
        "${pub[@]}" -i "alarm$s" -q 1 -t "plant/$s/alarm" \
          -m "$(head -c $((100 + (i * 37 + s) % 400)) /dev/zero | tr '\0' 'a')" || true
        [ $((i % 3)) -ne 0 ] || "${pub[@]}" -i "status$s" -r -q 1 -t "plant/$s/status" -m "up $i" || true
      done ) &
  done
  sleep "$seconds"
  sleep 3
  kill -TERM "$(pgrep -P "$broker" -x mosquitto || echo "$broker")" 2>/dev/null || true
  wait "$broker" || true
  cp "$tmp/mqtt-broker.hkt.gz" "$out/mqtt-broker.hkt.gz"
  "$heapkit" info "$out/mqtt-broker.hkt.gz" || true
}

firmware() {
  local fw=$root/build/record-firmware rounds=${FW_ROUNDS:-4000}
  for board in mps2-an385:arm-cortex-m3:cm3 riscv-virt:riscv32-imac:rv32; do
    IFS=: read -r qboard chain tag <<<"$board"
    cmake -S "$root/examples/firmware-trace" -B "$fw/$tag" \
      -DCMAKE_TOOLCHAIN_FILE="$root/ports/baremetal/cmake/$chain.cmake" -DFR_PEERS="$fw/peers" >/dev/null
    cmake --build "$fw/$tag" -j 2 --target fw_heap_4 >/dev/null
    "$root/ports/baremetal/run-qemu.sh" "$qboard" "$fw/$tag/fw_heap_4.elf" "$fw/$tag/freertos.hkfw" "$rounds"
    gzip -9 -n -c "$fw/$tag/freertos.hkfw" >"$out/freertos-$tag.hkfw.gz"
  done
}

itc() {
  local fw=$root/build/record-itc
  cmake -S "$root/examples/firmware-itc" -B "$fw" \
    -DCMAKE_TOOLCHAIN_FILE="$root/ports/baremetal/cmake/arm-cortex-m3.cmake" >/dev/null
  cmake --build "$fw" -j 2 --target itc_trace >/dev/null
  "$root/ports/baremetal/run-qemu.sh" mps2-an385 "$fw/itc_trace.elf" "$fw/itc-kernel.hkfw"
  gzip -9 -n -c "$fw/itc-kernel.hkfw" >"$out/itc-kernel.hkfw.gz"
}

case "${1:-}" in
  mqtt) mqtt ;;
  firmware) firmware ;;
  itc) itc ;;
  *) echo "usage: $0 mqtt|firmware|itc" >&2; exit 2 ;;
esac
