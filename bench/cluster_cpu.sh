#!/usr/bin/env bash
# cluster_cpu.sh measures where an act's CPU goes on a NATS JetStream
# cluster, each part a process of its own: three `runehost nats` nodes (R3)
# and one `runehost serve` host, with RUNS runs of ACTS fs.read acts each
# admitted at once. It prints acts/s and the CPU per act of the host and of
# each node (from /proc), and the host's requests to the nodes per act
# (its metrics), for docs/cluster.md's projection.
#
#   go build -o /tmp/rh ./cmd/runehost && bench/cluster_cpu.sh /tmp/rh
set -euo pipefail
rh=${1:?usage: cluster_cpu.sh RUNEHOST_BINARY}
runs=${RUNS:-32}
acts=${ACTS:-100}
dir=$(mktemp -d /tmp/cluster-cpu.XXXXXX)
pids=()
stop() { # the host first (it drains through the nodes), then the nodes
  [ -n "${host:-}" ] && kill "$host" 2>/dev/null && for _ in $(seq 100); do kill -0 "$host" 2>/dev/null || break; sleep 0.1; done
  kill -9 "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap stop EXIT

trips() { # the host's requests to the nodes so far: reads scans commits (its metrics)
  curl -s --unix-socket "$dir/h1/serve.sock" http://host/metrics |
    awk '/^runehost_store_requests_total/ { n[$1] = $2 } END { printf "%d %d %d\n", n["runehost_store_requests_total{kind=\"read\"}"], n["runehost_store_requests_total{kind=\"scan\"}"], n["runehost_store_requests_total{kind=\"commit\"}"] }'
}

cpu() { # utime+stime of pid, in clock ticks
  awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

for i in 1 2 3; do
  routes=$(for j in 1 2 3; do if [ $j != $i ]; then printf 'nats://127.0.0.1:624%d,' $j; fi; done)
  "$rh" nats --dir "$dir/n$i" --name "n$i" --listen "127.0.0.1:524$i" \
    --cluster cpu --cluster-listen "127.0.0.1:624$i" --routes "${routes%,}" 2>"$dir/n$i.log" &
  pids+=($!)
done
export RUNEHOST_NATS=nats://127.0.0.1:5241,nats://127.0.0.1:5242,nats://127.0.0.1:5243
export RUNEHOST_NATS_REPLICAS=3 RUNEHOST_STORE="$dir/h1"
"$rh" serve --listen off --workers "$runs" 2>"$dir/h1.log" &
host=$!
pids+=($host)
for _ in $(seq 600); do [ -S "$dir/h1/serve.sock" ] && [ -f "$dir/h1/serve.json" ] && break; sleep 0.1; done # served: the runs go through the host
echo hi >"$dir/f.txt"
"$rh" grant "fs.read:$dir" >/dev/null
cat >"$dir/cpu.rune" <<EOF
var i = 0
while i < $acts { act "fs.read" {path: "$dir/f.txt"}; i += 1 }
return i
EOF
"$rh" run --name cpu "$dir/cpu.rune" >/dev/null 2>&1 # warm: the stream, the compile

before=()
for p in "${pids[@]}"; do before+=($(cpu "$p")); done
read -r r0 s0 c0 < <(trips)
start=$(date +%s%N)
runpids=()
for r in $(seq "$runs"); do "$rh" run --name "cpu$r" "$dir/cpu.rune" >/dev/null 2>&1 & runpids+=($!); done
wait "${runpids[@]}" || true
end=$(date +%s%N)
total=$((runs * acts))
tick=$(getconf CLK_TCK)
echo "acts: $total in $(((end - start) / 1000000)) ms: $((total * 1000000000 / (end - start))) acts/s"
read -r r1 s1 c1 < <(trips)
awk -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v n="$total" 'BEGIN { printf "per act: %.2f reads, %.2f scans, %.2f commits\n", r / n, s / n, c / n }'
names=(node1 node2 node3 host)
for k in "${!pids[@]}"; do
  used=$(($(cpu "${pids[$k]}") - ${before[$k]}))
  echo "${names[$k]}: $((used * 1000000 / tick / total)) cpu-µs/act"
done
