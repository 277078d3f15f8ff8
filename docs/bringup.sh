#!/usr/bin/env bash
# A bring-up on two virtual boards (`linkteam vboard`), as a person with two boards
# would run it: flash (the first try with a broken bus setting, which the board's own boot
# error reports), list the boards, command one node (status, set a gain, save, reset, get,
# brake, release, jog until the dead-man brakes it, zero), then a HIL run that tracks.
#
#   docs/bringup.sh [WORKDIR]      (BASE=47300: the UDP base port of the boards' bus)
#
# Every step prints the command, its output and its exit status, and is checked against
# the status expected; the script exits 1 at the first step that differs (tests/test_bringup.py
# runs it). The virtual boards are stopped at the end, also on failure.
set -u
cd "$(dirname "$0")/.."
LT=${LINKTEAM:-.venv/bin/linkteam}
DIR=${1:-$(mktemp -d)}
BASE=${BASE:-47300}
mkdir -p "$DIR"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

expect() {   # expect STATUS ARGS...: run `linkteam ARGS`, check its exit status
    local want=$1; shift
    echo "\$ linkteam $*"
    "$LT" "$@" 2>&1
    local got=$?
    echo "(exit $got)"
    if [ "$got" != "$want" ]; then echo "BRINGUP FAILED: expected exit $want"; exit 1; fi
}

for i in 1 2; do
    "$LT" vboard "$DIR/board$i" --fs "$DIR/fs$i" 2>/dev/null &
    PIDS+=($!)
done
for _ in $(seq 300); do [ -e "$DIR/board1" ] && [ -e "$DIR/board2" ] && break; sleep 0.1; done

# the HIL scenario, with the agents' silent-bus watchdog relaxed for a lockstep run
cat > "$DIR/hil2-bringup.toml" <<TOML
extends = "$PWD/scenarios/hil2.toml"
[behaviours.safety]
watchdog_ms = 2000
TOML
S="$DIR/hil2-bringup.toml"
BUS="{\"base_port\": $BASE}"

echo "== the arm's key (mode 0600): every command below signs with it (docs/security.md)"
rm -f "$DIR/arm.key" "$DIR/arm.key.fv"
expect 0 keys create "$DIR/arm.key"
export LINKTEAM_KEY="$DIR/arm.key"

echo "== flash, link 1 with a base_port that is not a number: the board's own error, exit 1"
expect 1 flash --port "$DIR/board1" --link 1 --scenario "$S" --bus-json '{"base_port": "47x"}'
echo "== flash both boards"
expect 0 flash --chain "1=$DIR/board1,2=$DIR/board2" --scenario "$S" --bus-json "$BUS"
expect 0 boards --ports "$DIR/board1,$DIR/board2"
echo "== one node: status, a gain set, saved, the board reset, the gain read back"
N=(node --ports "udp:$BASE" --link 1)
expect 0 "${N[@]}" status
expect 0 "${N[@]}" set behaviours.brake.kw 45
expect 0 "${N[@]}" save
expect 0 "${N[@]}" reset
expect 0 "${N[@]}" get behaviours.brake.kw
echo "== brake, release"
expect 0 "${N[@]}" brake
expect 0 "${N[@]}" release
echo "== jog by torque for 0.5 s, then stop refreshing: the dead-man brakes the joint"
expect 0 "${N[@]}" jog --torque 2 --for 0.5 --scenario "$S"
expect 0 "${N[@]}" release
echo "== zero: a virtual board's joint is the host's simulated plant, no encoder (exit 1)"
expect 1 "${N[@]}" zero
echo "== a HIL run on both boards (lockstep)"
expect 0 run "$S" --mode hil --ports "udp:$BASE" --lockstep --out "$DIR/hil" --no-plots
echo "BRINGUP OK"
