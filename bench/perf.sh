#!/usr/bin/env bash
# The performance report of issue #5: uiwarp against raw TCP and against
# libfabric's tcp provider on this machine, over 127.0.0.1.
#
#   - throughput sweep (uiwarp-perf --loopback --tcp --bw): RDMA Write,
#     RDMA Read and Send, CRC on and CRC off;
#   - latency sweep, 8 B .. 1 MiB (--lat --poll): RDMA Write and Send
#     ping-pong, and libfabric's `fi_pingpong -p tcp -e msg` at the same
#     sizes next to uiwarp's Send/Receive ping-pong run, like it, as a
#     server and a client process;
#   - message rate (--rate --poll): 8-octet Writes and Sends, 64 outstanding;
#   - the placement of the two CPUs (bench/cpuprobe.c), which the libfabric
#     comparison holds constant within a turn, and under which the 8-octet
#     ping-pong is run again, run by run, to give its ratio for each;
#
# raw TCP takes turns with uiwarp for each figure in the same
# invocation.  Writes bench/perf-latest.md and the plots bench/perf-bw.png
# and bench/perf-lat.png.  A benchmark: it never fails for being slow.
#
# usage: bench/perf.sh
#   BUILD=<dir>    build directory (default: build)
#   SECS=<s>       seconds per bandwidth / rate measurement (default 1)
#   REPEAT=<n>     runs per figure, the median kept (default 3; uiwarp-perf
#                  --repeat)
#   FI_TURNS=<n>   turns per size in the libfabric comparison that stayed at
#                  one placement of the CPUs (default 5; up to three times
#                  as many are taken to get them)
#   ITERS=<n>      ping-pong iterations per size, one process (default 2000)
#   FI_ITERS=<n>   ping-pongs per run in the libfabric comparison (default
#                  10000; a quarter above 64 KiB)
#   P8_TURNS=<n>   probe-checked runs of the 8-octet ping-pong (default 8)
#   P8_ITERS=<n>   ping-pongs per such run (default 20000)
#   SWEEP=<a:b>    bandwidth sizes, powers of two (default 1k:16m)
#   LAT_SWEEP=<a:b> latency sizes (default 8:1m)
#   FI_PORT=<n>    first port for fi_pingpong (default 47592)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
secs=${SECS:-1}
repeat=${REPEAT:-3}
fi_turns=${FI_TURNS:-5}
iters=${ITERS:-2000}
fi_iters=${FI_ITERS:-10000}
p8_turns=${P8_TURNS:-8}
p8_iters=${P8_ITERS:-20000}
sweep=${SWEEP:-1k:16m}
lat_sweep=${LAT_SWEEP:-8:1m}
fi_port=${FI_PORT:-47592}
out=$src/bench/perf-latest.md
# shellcheck source=lib.sh
source "$src/bench/lib.sh"

bash "$src/bench/deps.sh"
if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target uiwarp-perf -j "$(nproc)" >/dev/null
perf=$build/uiwarp-perf

work=$(mktemp -d)
fipid=
cleanup() {
	[ -n "$fipid" ] && kill "$fipid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Where the host has put the two vCPUs (bench/cpuprobe.c): a cache
# line's round trip between them is "near" (a shared cache) or "far",
# and the machine changes between the two every few seconds; a loopback
# ping-pong of 64 KiB takes up to 2.4 times as long far.  A turn counts
# when the probes before, between and after its three runs all found
# the same placement; up to three times $fi_turns turns are taken to
# get $fi_turns of them.  The ratio of a size is the median of its
# counted turns' ratios, each of runs made at one placement.  Without
# a probe (one CPU) every turn counts.
cc -O2 -pthread -o "$work/cpuprobe" "$src/bench/cpuprobe.c"
probe_min=
if "$work/cpuprobe" -t 10 >"$work/placement" 2>/dev/null; then
	probe_min=$(sort -n "$work/placement" | sed -n 1p)
fi
# Sets cls to n (near), f (far) or - (no probe); logs the round trip.
probe() {
	local ns

	cls=-
	[ -n "$probe_min" ] || return 0
	ns=$("$work/cpuprobe" 10 2>/dev/null) || return 0
	[ "$ns" -lt "$probe_min" ] && probe_min=$ns
	if [ "$ns" -lt $((2 * probe_min)) ]; then cls=n; else cls=f; fi
	echo "$ns" >>"$work/probes"
}
# One uiwarp-perf invocation of the one-process part, named $1 in the
# report, between two placement probes ("$1 before after" in phases).
run() {
	local name=$1 c

	shift
	probe; c=$cls
	echo "+ uiwarp-perf --repeat $repeat $*" >&2
	"$perf" --repeat "$repeat" "$@"
	probe
	echo "$name $c $cls" >>"$work/phases"
}
: >"$work/phases"
: >"$work/probes"

run "throughput, CRC on" --loopback --tcp --bw -t write,read,send \
	--sweep "$sweep" -D "$secs" --crc on --csv >"$work/bw-on.csv"
run "throughput, CRC off" --loopback --tcp --bw -t write,read,send \
	--sweep "$sweep" -D "$secs" --crc off --csv >"$work/bw-off.csv"
run "latency" --loopback --tcp --lat -t write,send --sweep "$lat_sweep" \
	-n "$iters" --poll --csv >"$work/lat.csv"
# Polling, with the posts of a turn sent together at the next poll.
run "message rate" --loopback --tcp --rate -t write,send -D "$secs" --poll \
	--csv >"$work/rate.csv"

# Send/Receive ping-pong with server and client in two processes, as
# fi_pingpong runs (one spinning thread each; --loopback puts both ends and
# their progress threads in one process), against libfabric's tcp
# provider: fi_pingpong server and client on 127.0.0.1.  Per size, the
# three take turns (uiwarp CRC off, uiwarp CRC on, fi_pingpong) with the
# same number of ping-pongs, so that a slow stretch of the machine falls
# on all of them alike, and the turns are compared at one placement of
# the CPUs (below).  Which of the three goes first rotates from turn to
# turn: with short runs the first of a turn was the slowest (at 256 B
# and 4 KiB, CRC off 1.4 times CRC on in the same turns), and runs of
# 10000 ping-pongs (2000 before) keep a millisecond's stall from moving
# a mean by much.  CRC
# off is the like-for-like setting (libfabric's tcp provider adds no
# digest of its own); CRC on is reported next to it.  fi_pingpong's
# "usec/xfer" is the time of one transfer, half a round trip, the mean
# over the run; its "bytes" column reads "1k", "2m" ..., so the row is
# the first one after the header.  uiwarp's figure is its mean too.
# One uiwarp run: size, iterations, crc; appends its CSV row to $4.
uiw_pingpong() {
	local port=$((fi_port - 1))

	"$perf" -s -p "$port" >"$work/perf-srv.out" 2>&1 &
	fipid=$!
	wait_listen "$port" || { cat "$work/perf-srv.out" >&2; exit 1; }
	echo "+ uiwarp-perf -c 127.0.0.1 --lat -t send -S $1 -n $2 --poll --crc $3" >&2
	"$perf" -c 127.0.0.1 -p "$port" --lat -t send -S "$1" -n "$2" --poll \
		--crc "$3" --csv >"$work/one.csv"
	wait "$fipid" 2>/dev/null || true
	fipid=
	tail -n +2 "$work/one.csv" >>"$4"
}
# One fi_pingpong run: size, iterations, port; appends usec/xfer to $4.
fi_run() {
	echo "+ fi_pingpong -p tcp -e msg -I $2 -S $1" >&2
	fi_pingpong -p tcp -e msg -B "$3" -I "$2" -S "$1" \
		>"$work/fi-srv.out" 2>&1 &
	fipid=$!
	wait_listen "$3" || true
	if timeout 300 fi_pingpong -p tcp -e msg -P "$3" -I "$2" -S "$1" \
		127.0.0.1 >"$work/fi-cli.out" 2>&1; then
		awk '
			/usec\/xfer/ { for (i = 1; i <= NF; i++) if ($i == "usec/xfer") c = i; next }
			c && NF >= c { print $c; exit }' \
			"$work/fi-cli.out" >>"$4"
	else
		echo "fi_pingpong failed at $1 octets:" >&2
		cat "$work/fi-cli.out" >&2
	fi
	wait "$fipid" 2>/dev/null || true
	fipid=
}
# The mean half round trip (column 14) of a run's CSV row, or nothing.
run_mean() {
	[ -s "$1" ] && cut -d, -f14 "$1" | sed -n 1p
}
: >"$work/turns"
size=$(to_octets "${lat_sweep%%:*}")
hi=$(to_octets "${lat_sweep##*:}")
port=$fi_port
while [ "$size" -le "$hi" ]; do
	n=$fi_iters
	[ "$size" -gt 65536 ] && n=$(((fi_iters + 3) / 4))
	counted=0
	tries=0
	while [ "$counted" -lt "$fi_turns" ] && [ "$tries" -lt $((3 * fi_turns)) ]; do
		tries=$((tries + 1))
		: >"$work/run-off"
		: >"$work/run-on"
		: >"$work/run-fi"
		probe; c=$cls
		for k in 0 1 2; do
			case $(((tries + k) % 3)) in
			0) uiw_pingpong "$size" "$n" off "$work/run-off" ;;
			1) uiw_pingpong "$size" "$n" on "$work/run-on" ;;
			2) fi_run "$size" "$n" "$port" "$work/run-fi" ;;
			esac
			probe; [ "$cls" = "$c" ] || c=x
		done
		port=$((port + 1))
		off=$(run_mean "$work/run-off")
		on=$(run_mean "$work/run-on")
		fiv=$(head -1 "$work/run-fi")
		if [ -z "$off" ] || [ -z "$on" ] || [ -z "$fiv" ]; then
			continue
		fi
		echo "$size $c $off $on $fiv" >>"$work/turns"
		[ "$c" = x ] || counted=$((counted + 1))
	done
	size=$((size * 2))
done
# Per size: "size fi off on off/fi on/fi counted near far all" (medians;
# counted 0: no turn stayed at one placement, all turns used).
awk "$awk_med"'
	!($1 in seen) { seen[$1] = 1; order[++ns] = $1 }
	{ all[$1]++; row[$1, all[$1]] = $0 }
	$2 != "x" { cnt[$1]++ }
	$2 == "n" { near[$1]++ }
	$2 == "f" { far[$1]++ }
	END {
		for (q = 1; q <= ns; q++) {
			s = order[q]; k = 0
			for (i = 1; i <= all[s]; i++) {
				split(row[s, i], r, " ")
				if (cnt[s] && r[2] == "x")
					continue
				k++
				fv[k] = r[5]; ov[k] = r[3]; nv[k] = r[4]
				ro[k] = r[3] / r[5]; rn[k] = r[4] / r[5]
			}
			printf "%s %.2f %.2f %.2f %.3f %.3f %d %d %d %d\n", s,
				med(fv, k), med(ov, k), med(nv, k), med(ro, k),
				med(rn, k), cnt[s] + 0, near[s] + 0, far[s] + 0,
				all[s]
		}
	}' "$work/turns" >"$work/fi.dat"

# The 8-octet ping-pong of the targets, run by run with a probe before
# and after (as the libfabric turns): the ratio to raw TCP differs with
# the placement more than anything uiwarp does, so it is given for each.
# A run counts under the placement both probes found.
: >"$work/p8"
for _ in $(seq "$p8_turns"); do
	probe; c=$cls
	"$perf" --loopback --tcp --lat --poll -t write,send -S 8 -n "$p8_iters" \
		--csv >"$work/p8.csv" || continue
	probe; [ "$cls" = "$c" ] || c=x
	awk -F, -v c="$c" 'NR > 1 { r[$1] = $23 }
		END { if (("write" in r) && ("send" in r)) print c, r["write"], r["send"] }' \
		"$work/p8.csv" >>"$work/p8"
done

# The CPU's copy rate against (dst - src) mod 4096: what MPA's headers
# do to the kernel's payload copies (see bench/copyalign.c).
cc -O2 -o "$work/copyalign" "$src/bench/copyalign.c"
"$work/copyalign" >"$work/copyalign.md"

# What the shape of MPA traffic costs a ping-pong, without uiwarp: raw TCP
# against FPDU-framed messages sent and read in different ways, the
# patterns taking turns on one connection (see bench/wirepattern.c).
cc -O2 -o "$work/wirepattern" "$src/bench/wirepattern.c"
for size in 65536 131072 262144 524288; do
	"$work/wirepattern" "$size" 20 64690 60
	echo
done >"$work/wirepattern.md"

# ---- the report -----------------------------------------------------------
# CSV columns of uiwarp-perf: 1 test, 3 size, 5 depth, 11 mbps, 12 mmsgs,
# 14 lat_avg_us, 15 lat_median_us, 16 lat_p99_us, 17 tcp_mbps,
# 18 tcp_mmsgs, 21 tcp_lat_median_us, 22 tcp_lat_p99_us, 23 vs_tcp.
cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$src" diff --quiet HEAD -- src include tools 2>/dev/null ||
   [ -n "$(git -C "$src" ls-files --others --exclude-standard -- src include tools 2>/dev/null)" ]; then
	rev="$rev (with local changes)"
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
mulpdu=$("$perf" --loopback -S 8 -D 0.05 | sed -n 's/.*MULPDU \([0-9]*\).*/\1/p')

{
	# uiwarp-perf's turns: up to 10, each at least 4 warm-ups (100) long
	lat_turns=$((iters / 400))
	[ "$lat_turns" -le 10 ] || lat_turns=10
	[ "$lat_turns" -ge 2 ] || lat_turns=1
	echo "# uiwarp performance over 127.0.0.1"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- load average before the run: $load_before"
	echo "- source: $rev, build type ${btype:-unknown}; MULPDU $mulpdu"
	echo "- uiwarp-perf --loopback --tcp: bandwidth ${secs} s per figure" \
		"(depth 16, 1 QP, event-driven completions), latency $iters" \
		"ping-pongs per size (--poll) in $lat_turns turns that alternate" \
		"with raw TCP's, each after 100 of warm-up, rate ${secs} s (8 B," \
		"depth 64, --poll)"
	echo "- every figure is the median of $repeat runs (uiwarp-perf --repeat $repeat;" \
		"raw TCP takes turns with each uiwarp run (bandwidth, rate: four" \
		"turns each, raw TCP streaming from and into as much memory as" \
		"uiwarp's slots, depth x size);" \
		"against libfabric, per size" \
		"$fi_turns turns of uiwarp CRC off, uiwarp CRC on and fi_pingpong, as" \
		"two processes each, with the same number of ping-pongs: $fi_iters up to" \
		"64 KiB, $(((fi_iters + 3) / 4)) above, the three runs of a turn in" \
		"an order that rotates from turn to turn; a turn counts when the CPUs'" \
		"placement stayed the same through its three runs, see below)"
	echo "- libfabric: $(fi_info --version 2>/dev/null | sed -n 1p || echo fi_pingpong)," \
		"\`fi_pingpong -p tcp -e msg\`, server and client on 127.0.0.1"
	echo
	echo "Ratios: \"vs TCP\" is uiwarp over raw TCP measured in turns with it at"
	echo "the same size (throughput: higher is better; latency: lower is"
	echo "better); \"vs libfabric\" is uiwarp's mean Send/Receive half round"
	echo "trip over fi_pingpong's mean in the same turn, the median over the"
	echo "turns counted (lower is better)."
	echo
	echo "## Throughput (MB/s = 10^6 payload octets per second)"
	echo
	echo "| test | size | CRC on | raw TCP | vs TCP | CRC off | raw TCP | vs TCP |"
	echo "|------|-----:|-------:|--------:|-------:|--------:|--------:|-------:|"
	awk -F, '
		FNR == 1 { f++; next }
		f == 1 { key[++n] = $1 SUBSEP $3; t[n] = $1; s[n] = $3
			 on[n] = $11; ton[n] = $17; ron[n] = $23 }
		f == 2 { off[$1 SUBSEP $3] = $11; toff[$1 SUBSEP $3] = $17
			 roff[$1 SUBSEP $3] = $23 }
		END {
			for (i = 1; i <= n; i++) {
				k = key[i]
				sz = s[i] >= 1048576 ? s[i] / 1048576 " MiB" : \
				     s[i] >= 1024 ? s[i] / 1024 " KiB" : s[i] " B"
				printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
					t[i], sz, on[i], ton[i], ron[i], off[k], toff[k], roff[k]
			}
		}' "$work/bw-on.csv" "$work/bw-off.csv"
	echo
	echo "## Latency (half round trip, µs; polling completions)"
	echo
	echo "One process (--loopback, CRC on) against raw TCP; for libfabric,"
	echo "uiwarp's server and client run as two processes, as fi_pingpong's"
	echo "do (means), with CRC off (libfabric's tcp provider has no digest"
	echo "either) and with CRC on, taking turns with fi_pingpong size by size."
	echo "The three latency columns of that comparison are medians over the"
	echo "turns counted; \"turns counted\" says how many of those taken stayed"
	echo "at one placement of the CPUs, and which."
	echo
	echo "| test | size | median | p99 | mean | raw TCP median | vs TCP | 2 processes, CRC off | CRC on | libfabric mean | vs libfabric, CRC off | CRC on | turns counted |"
	echo "|------|-----:|-------:|----:|-----:|---------------:|-------:|---------------------:|-------:|---------------:|----------------------:|-------:|---------------|"
	awk -F, '
		FILENAME ~ /fi.dat$/ {
			fi[$1] = sprintf("%.2f | %.2f | %.2f | %.2f | %.2f | %s", $3, $4,
					 $2, $5, $6, $7 ? $7 " of " $10 " (" $8 " near, " $9 " far)" : \
					 "0 of " $10 ": all used")
			next
		}
		FNR == 1 { next }
		{
			sz = $3 >= 1048576 ? $3 / 1048576 " MiB" : \
			     $3 >= 1024 ? $3 / 1024 " KiB" : $3 " B"
			lf = $1 == "send" && ($3 in fi) ? fi[$3] : "- | - | - | - | - | -"
			printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n",
				$1, sz, $15, $16, $14, $21, $23, lf
		}' FS=' ' "$work/fi.dat" FS=, "$work/lat.csv"
	echo
	echo "## Message rate (8 B, 64 outstanding, 1 QP)"
	echo
	echo "| test | size | depth | million msg/s | raw TCP million msg/s | vs TCP |"
	echo "|------|-----:|------:|--------------:|----------------------:|-------:|"
	awk -F, 'FNR > 1 { printf "| %s | %s B | %s | %.4f | %.4f | %.2f |\n",
		$1, $3, $5, $12, $18, $23 }' "$work/rate.csv"
	echo
	echo "## Against the targets of issue #5"
	echo
	p8sum=$(awk "$awk_med"'
		$1 != "x" { k = $1; c[k]++; w[k, c[k]] = $2; s[k, c[k]] = $3 }
		{ all++ }
		END {
			printf "in %d runs of their own with a placement probe before and after:", all
			split("n f -", ks, " "); nm["n"] = "near"; nm["f"] = "far"
			nm["-"] = "no probe"; sep = ""
			for (i = 1; i <= 3; i++) {
				k = ks[i]
				if (!c[k]) continue
				for (j = 1; j <= c[k]; j++) { a[j] = w[k, j]; b[j] = s[k, j] }
				printf "%s %s (%d runs) write %.2f, send %.2f", sep, nm[k], c[k], med(a, c[k]), med(b, c[k])
				sep = ";"
			}
			if (sep == "") printf " none kept one placement"
		}' "$work/p8")
	awk -F, -v p8="$p8sum" '
		FNR == 1 { f++; next }
		f <= 2 && $3 >= 65536 {
			k = $1 (f == 1 ? " CRC on" : " CRC off")
			if (!(k in lo) || $23 < lo[k]) lo[k] = $23
			if (!(k in hi) || $23 > hi[k]) hi[k] = $23
		}
		f == 3 && $3 == 8 { l8[$1] = $23 }
		f == 4 { r[$1] = $12 }
		END {
			printf "- Write, Send, Read throughput at 64 KiB and more, vs raw TCP (lowest .. highest over the sizes):"
			printf " target Write/Send >= 0.90 with CRC, >= 0.95 without; Read >= 0.85\n"
			split("write CRC on,send CRC on,read CRC on,write CRC off,send CRC off,read CRC off", ks, ",")
			for (i = 1; i <= 6; i++)
				if (ks[i] in lo)
					printf "  - %s: %.2f .. %.2f\n", ks[i], lo[ks[i]], hi[ks[i]]
			printf "- 8 B ping-pong, median vs raw TCP (target <= 1.2): write %.2f, send %.2f\n", l8["write"], l8["send"]
			if (p8 != "") printf "  - %s\n", p8
			printf "- 8 B message rate, 64 outstanding (target >= 1 million/s for write): write %.3f, send %.3f million/s\n", r["write"], r["send"]
		}' "$work/bw-on.csv" "$work/bw-off.csv" "$work/lat.csv" "$work/rate.csv"
	for crc in off on; do
		awk -v crc="$crc" '
			{ r = crc == "off" ? $5 : $6; n++; if (r <= 1) w++; if (r > m) m = r }
			END {
				printf "- Send/Receive ping-pong vs libfabric tcp, both as two processes, uiwarp CRC %s (target: at least as fast at every size): ", crc
				printf "uiwarp as fast or faster at %d of %d sizes; worst ratio %.2f\n", w, n, m
			}' "$work/fi.dat"
	done
	echo
	echo "## Placement of the two CPUs (bench/cpuprobe.c)"
	echo
	echo "The round trip of one cache line between a thread on each CPU."
	echo "On this virtual machine it is either short (the vCPUs share a cache)"
	echo "or several times as long, and changes between the two every few"
	echo "seconds; loopback ping-pongs of every kind slow down with it (see"
	echo "bench/profile.md).  \"far\" is at least twice the shortest seen."
	echo
	if [ -s "$work/placement" ]; then
		awk -v min="$probe_min" "$awk_med"'
			{ n++; if ($1 >= 2 * min) { f[++k] = $1 } }
			END {
				printf "- before the runs, 10 s in 50 ms windows: shortest %d ns; far in %d of %d windows", min, k, n
				if (k) printf " (median %d ns)", med(f, k)
				printf "\n"
			}' "$work/placement"
		awk -v min="$probe_min" '
			{ n++; if ($1 >= 2 * min) k++ }
			END { printf "- probes between the runs (one-process parts, libfabric turns, 8-octet runs): %d, far %d\n", n, k }' "$work/probes"
		awk '
			{ n++; if ($2 == "n") a++; else if ($2 == "f") b++; else x++ }
			END { printf "- libfabric turns: %d taken, %d near and %d far counted, %d with a change of placement left out (unless a size had no other)\n", n, a, b, x }' "$work/turns"
		awk '
			{ n++; if ($1 == "n") a++; else if ($1 == "f") b++; else x++ }
			END { printf "- 8-octet ping-pong runs: %d, %d near, %d far, %d with a change of placement\n", n, a, b, x }' "$work/p8"
		awk '
			{ c = $NF; b = $(NF - 1); $NF = ""; $(NF - 1) = ""
			  sub(/ +$/, "")
			  nm["n"] = "near"; nm["f"] = "far"; nm["-"] = "?"
			  printf "- one process, %s: %s before, %s after\n", $0, nm[b], nm[c] }' "$work/phases"
	else
		echo "- no probe: fewer than two CPUs to use; every turn counted"
	fi
	echo
	echo "## Copy rate against alignment (bench/copyalign.c)"
	echo
	echo "The kernel copies socket payload with \"rep movsb\" on this CPU; its"
	echo "rate depends on (destination - source) mod 4096, 64 KiB copies"
	echo "between page-aligned buffers (best of five).  Raw TCP with aligned"
	echo "buffers copies at distance 0; MPA's headers and CRCs shift each"
	echo "FPDU's payload by another 24 to 28 octets, and only distances from"
	echo "1 to 31 are slow (see bench/profile.md)."
	echo
	cat "$work/copyalign.md"
	echo
	echo "## The wire pattern without uiwarp (bench/wirepattern.c)"
	echo
	echo "Two processes, Send-sized FPDUs (20-octet headers, 64690 octets of"
	echo "payload), half round trip; the patterns take turns in blocks of ten"
	echo "ping-pongs on one connection.  eor+fpdu is uiwarp's with align ON:"
	echo "one sendmsg per FPDU with MSG_EOR (FPDU alignment, RFC 5044 §5.1) and"
	echo "one read per FPDU.  one+: a single sendmsg for the whole message;"
	echo "+bulk: reads as large as the message; mm+fpdu: a message per FPDU"
	echo "without MSG_EOR (the cost of the messages apart from the flag's);"
	echo "first+fpdu is uiwarp's default to this host: the first FPDU as a"
	echo "message of its own, the others as one, one read per FPDU."
	echo
	cat "$work/wirepattern.md"
	echo "Plots: [throughput](perf-bw.png), [latency](perf-lat.png)."
} >"$work/report.md"

# ---- the plots ------------------------------------------------------------
col() { # col <csv> <test> <column> > data: "size value"
	awk -F, -v t="$2" -v c="$3" 'FNR > 1 && $1 == t { print $3, $c }' "$1"
}
for t in write read send; do
	col "$work/bw-on.csv" "$t" 11 >"$work/bw-$t-on.dat"
	col "$work/bw-off.csv" "$t" 11 >"$work/bw-$t-off.dat"
done
col "$work/bw-on.csv" write 17 >"$work/bw-tcp.dat"
for t in write send; do
	col "$work/lat.csv" "$t" 15 >"$work/lat-$t.dat"
done
col "$work/lat.csv" send 21 >"$work/lat-tcp.dat"
awk '{ print $1, $3 }' "$work/fi.dat" >"$work/lat-send2.dat"
gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set datafile separator " "
set logscale x 2
set format x "%.0s%cB"
set xlabel "message size (octets)"
set grid
set key left top
set output "$work/perf-bw.png"
set title "uiwarp throughput vs raw TCP, 127.0.0.1 (depth 16, 1 QP)"
set ylabel "MB/s (10^6 octets/s)"
plot "$work/bw-tcp.dat" using 1:2 with linespoints lw 2 title "raw TCP", \
     "$work/bw-write-on.dat" using 1:2 with linespoints title "RDMA Write, CRC on", \
     "$work/bw-write-off.dat" using 1:2 with linespoints title "RDMA Write, CRC off", \
     "$work/bw-send-on.dat" using 1:2 with linespoints title "Send, CRC on", \
     "$work/bw-send-off.dat" using 1:2 with linespoints title "Send, CRC off", \
     "$work/bw-read-on.dat" using 1:2 with linespoints title "RDMA Read, CRC on", \
     "$work/bw-read-off.dat" using 1:2 with linespoints title "RDMA Read, CRC off"
set output "$work/perf-lat.png"
set title "ping-pong half round trip, 127.0.0.1 (median; libfabric: mean)"
set ylabel "microseconds"
set logscale y 10
plot "$work/lat-tcp.dat" using 1:2 with linespoints lw 2 title "raw TCP", \
     "$work/lat-write.dat" using 1:2 with linespoints title "uiwarp RDMA Write", \
     "$work/lat-send.dat" using 1:2 with linespoints title "uiwarp Send/Receive", \
     "$work/lat-send2.dat" using 1:2 with linespoints title "uiwarp Send/Receive, 2 processes, CRC off (mean)", \
     "$work/fi.dat" using 1:2 with linespoints title "libfabric tcp (fi_pingpong)"
EOF
mv "$work/perf-bw.png" "$work/perf-lat.png" "$src/bench/"
mv "$work/report.md" "$out"
cat "$out"
