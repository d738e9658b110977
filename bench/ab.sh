#!/usr/bin/env bash
# A/B report: two revisions of uiwarp, BEFORE and AFTER, built side by
# side and measured in the same run, interleaved, next to raw TCP.
#
#   - throughput (uiwarp-perf --loopback --tcp --bw), RDMA Write and Send,
#     4 KiB to 16 MiB in powers of 4;
#   - the 8-octet ping-pong (--lat --poll), RDMA Write and Send;
#     each figure AB_ROUNDS times per side, the two sides taking turns
#     size by size (the one to go first alternating from round to round),
#     and raw TCP in turns with uiwarp inside each uiwarp-perf run;
#   - the engine's cost per message: user-space instructions and mutex
#     acquisitions per 8-octet Send/Receive ping-pong, in the client and
#     in the server process apart, counted by valgrind's callgrind over
#     runs of N1 and N2 ping-pongs: (count(N2) - count(N1)) / (N2 - N1),
#     so that setup and teardown cancel out.
#
# Writes bench/ab-latest.md (AB_OUT).  A benchmark: it reports ratios
# and the run-to-run spread, and never fails for being slow (a build that
# fails, or a revision that does not exist, does stop it).
#
# usage: bench/ab.sh            (make ab)
#   AB_BEFORE=<rev>    default 036d53fcdde5bfcb3ac6dc14c2845f164acad0d5
#                      (the engine before its rework)
#   AB_AFTER=<rev>     default HEAD; "worktree": the working tree as it is
#   AB_DIR=<dir>       scratch: sources and builds (default build-ab)
#   AB_QUICK=1         a short trial: 2 rounds, 4 KiB and 1 MiB, 0.2 s per
#                      figure, 2000 ping-pongs, callgrind at 1000 and 3000
#   AB_ROUNDS=<n>      rounds (default 5; at least 2)
#   AB_SIZES="<s> .."  throughput sizes (default "4k 16k 64k 256k 1m 4m 16m")
#   AB_TESTS=<list>    throughput tests (default write,send)
#   AB_SECS=<s>        seconds per throughput figure (default 0.5)
#   AB_LAT_ITERS=<n>   ping-pongs per 8-octet latency run (default 20000)
#   AB_CG_N1, AB_CG_N2 ping-pongs of the two callgrind runs (default 2000,
#                      12000)
#   AB_CG_POLL_RUNS=<n> callgrind runs per count with --poll, the one with
#                      the fewest instructions kept (default 3)
#   AB_CG=0            leave the callgrind part out
#   AB_PORT=<n>        first control port for the two-process runs (47400)
#   AB_OUT=<file>      the report (default bench/ab-latest.md)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$src/bench/lib.sh"

before_rev=${AB_BEFORE:-036d53fcdde5bfcb3ac6dc14c2845f164acad0d5}
after_rev=${AB_AFTER:-HEAD}
dir=${AB_DIR:-$src/build-ab}
quick=${AB_QUICK:-0}
if [ "$quick" = 1 ]; then
	d_rounds=2 d_sizes="4k 1m" d_secs=0.2 d_lat=2000 d_n1=1000 d_n2=3000
	d_poll=2
else
	d_rounds=5 d_sizes="4k 16k 64k 256k 1m 4m 16m" d_secs=0.5 d_lat=20000
	d_n1=2000 d_n2=12000 d_poll=3
fi
rounds=${AB_ROUNDS:-$d_rounds}
sizes=${AB_SIZES:-$d_sizes}
tests=${AB_TESTS:-write,send}
secs=${AB_SECS:-$d_secs}
lat_iters=${AB_LAT_ITERS:-$d_lat}
cg_n1=${AB_CG_N1:-$d_n1}
cg_n2=${AB_CG_N2:-$d_n2}
cg=${AB_CG:-1}
cg_poll_runs=${AB_CG_POLL_RUNS:-$d_poll}
port=${AB_PORT:-47400}
out=${AB_OUT:-$src/bench/ab-latest.md}
[ "$rounds" -ge 2 ] || { echo "ab.sh: AB_ROUNDS must be at least 2 (a spread needs two)" >&2; exit 2; }
[ "$cg_n2" -gt "$cg_n1" ] || { echo "ab.sh: AB_CG_N2 must be more than AB_CG_N1" >&2; exit 2; }
if [ "$cg" = 1 ] && ! command -v valgrind >/dev/null; then
	echo "ab.sh: valgrind not found; the callgrind part is left out" >&2
	cg=0
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
srvpid=
cleanup() {
	[ -n "$srvpid" ] && kill "$srvpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
t_start=$(date +%s)

# ---- the two builds ---------------------------------------------------------
# build_side NAME REV: the sources of REV exported (git archive) into
# $dir/NAME/src, or the working tree itself for "worktree", built in
# $dir/NAME/build as perf.sh builds (RelWithDebInfo: -O2 -g).  Reused
# when $dir/NAME/stamp names the same commit.  Sets NAME_perf, NAME_sha,
# NAME_desc (what the report says) and NAME_root (the source tree, for
# callgrind's file names).
build_side() {
	local name=$1 rev=$2 sha tree build log

	if [ "$rev" = worktree ]; then
		sha=$(git -C "$src" rev-parse HEAD)
		tree=$src
		printf -v "${name}_desc" '%s (working tree)' \
			"$(git -C "$src" log -1 --format='%h %s' HEAD)"
	else
		sha=$(git -C "$src" rev-parse --verify --quiet "$rev^{commit}") ||
			{ echo "ab.sh: no commit '$rev'" >&2; exit 2; }
		tree=$dir/$name/src
		if [ "$(cat "$dir/$name/stamp" 2>/dev/null)" != "$sha" ]; then
			rm -rf "${dir:?}/$name"
			mkdir -p "$tree"
			git -C "$src" archive "$sha" | tar -x -C "$tree"
			echo "$sha" >"$dir/$name/stamp"
		fi
		printf -v "${name}_desc" '%s' "$(git -C "$src" log -1 --format='%h %s' "$sha")"
	fi
	build=$dir/$name/build
	log=$dir/$name/build.log
	# a build directory made from another source tree is remade
	if [ -f "$build/CMakeCache.txt" ] &&
	   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$tree" "$build/CMakeCache.txt"; then
		rm -rf "$build"
	fi
	echo "+ build $name: $rev ($sha) in $build" >&2
	if ! { cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	       cmake --build "$build" --target uiwarp-perf -j "$(nproc)"; } >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "ab.sh: the build of $name ($rev) failed; see $log" >&2
		exit 1
	fi
	printf -v "${name}_perf" '%s' "$build/uiwarp-perf"
	printf -v "${name}_root" '%s' "$tree"
	printf -v "${name}_sha" '%s' "$sha"
}
before_perf= after_perf= before_root= after_root= before_sha= after_sha=
before_desc= after_desc=
build_side before "$before_rev"
build_side after "$after_rev"

perf_of() { if [ "$1" = before ]; then echo "$before_perf"; else echo "$after_perf"; fi; }
root_of() { if [ "$1" = before ]; then echo "$before_root"; else echo "$after_root"; fi; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- throughput and latency, interleaved ------------------------------------
# rows of $work/runs: kind test size side round value tcp vs_tcp
# (kind bw: MB/s; lat: median half round trip, µs)
: >"$work/runs"
: >"$work/failed"
# one SIDE ROUND KIND ARGS...: one uiwarp-perf run, its rows appended.
one() {
	local side=$1 r=$2 kind=$3 perf cols

	shift 3
	perf=$(perf_of "$side")
	echo "+ [$r $side] uiwarp-perf $*" >&2
	if ! timeout 600 "$perf" "$@" --csv >"$work/one.csv" 2>"$work/one.err"; then
		echo "$side round $r: uiwarp-perf $* failed: $(tr '\n' ' ' <"$work/one.err")" >>"$work/failed"
		return 0
	fi
	if [ "$kind" = bw ]; then
		cols=$(csv_cols "$work/one.csv" test size mbps tcp_mbps vs_tcp)
	else
		cols=$(csv_cols "$work/one.csv" test size lat_median_us tcp_lat_median_us vs_tcp)
	fi
	awk -F, -v c="$cols" -v k="$kind" -v s="$side" -v r="$r" '
		BEGIN { split(c, i, " ") }
		NR > 1 && i[1] && i[3] && $(i[3]) != "" {
			tcp = "-"; vs = "-"
			if (i[4] && $(i[4]) != "") tcp = $(i[4])
			if (i[5] && $(i[5]) != "") vs = $(i[5])
			print k, $(i[1]), $(i[2]), s, r, $(i[3]), tcp, vs
		}' "$work/one.csv" >>"$work/runs"
}
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
	for size in $sizes; do
		for side in $order; do
			one "$side" "$r" bw --loopback --tcp --bw -t "$tests" \
				-S "$size" -D "$secs"
		done
	done
	for side in $order; do
		one "$side" "$r" lat --loopback --tcp --lat --poll -t write,send \
			-S 8 -n "$lat_iters"
	done
done

# ---- callgrind: instructions and locks per ping-pong ------------------------
# cg_sum FILE ROOT: "ir lib crc qsort lock trylock unlock condlock
# cq_poll" of one callgrind output (--compress-strings=no): ir the
# program's instructions; lib those in functions of ROOT/src (uiwarp's
# own code), crc those of the CRC32c (src/wire/crc32c.c with the CPU's
# crc32 instruction, or ISA-L's crc32_iscsi), qsort the inclusive cost of
# calls to qsort (the tool sorting its latency samples, not the engine);
# then the calls to pthread_mutex_lock, _trylock, _unlock, and
# __pthread_mutex_cond_lock (a condition variable's wait taking its
# mutex back), and to uiw_cq_poll.  Call counts come from the "calls="
# lines, one per caller and call site, the cost line after each being
# the call's inclusive cost.
cg_sum() {
	awk -v root="$2" '
		function base(f) { sub(/@.*/, "", f); sub(/^_+/, "", f); return f }
		/^ob=/ { ob = substr($0, 4); next }
		/^fl=/ { fl = substr($0, 4); next }
		/^fn=/ { fn = substr($0, 4); next }
		/^cfn=/ { cfn = base(substr($0, 5)); next }
		/^calls=/ { split($1, a, "="); calls[cfn] += a[2]; after = 1; next }
		/^(summary|totals):/ { tot = $2; next }
		/^[0-9+*-]/ {
			if (after) { after = 0; if (cfn == "qsort") qs += $2; next }
			if (fl == root "/src/wire/crc32c.c" || ob ~ /libisal/) crc += $2
			if (index(fl, root "/src/") == 1) lib += $2
			next
		}
		END {
			printf "%d %d %d %d %d %d %d %d %d\n", tot, lib, crc, qs,
				calls["pthread_mutex_lock"], calls["pthread_mutex_trylock"],
				calls["pthread_mutex_unlock"], calls["pthread_mutex_cond_lock"],
				calls["uiw_cq_poll"]
		}' "$1"
}
# cg_run SIDE MODE N: one Send ping-pong of N 8-octet messages between a
# server and a client process, each under callgrind; appends
# "side mode n role <cg_sum>" to $work/cg for each process.
cg_run() {
	local side=$1 mode=$2 n=$3 perf root vg

	perf=$(perf_of "$side")
	root=$(root_of "$side")
	# --fair-sched: valgrind runs one thread at a time; with its default
	# lock a thread spinning on uiw_cq_poll and sched_yield can keep the
	# one that would complete its work waiting (more empty polls)
	vg="valgrind --tool=callgrind --compress-strings=no --compress-pos=no"
	[ "$mode" = event ] || vg="$vg --fair-sched=yes"
	port=$((port + 1))
	: >"$work/cg-cli.log"
	: >"$work/cg-srv.log"
	rm -f "$work/cg-cli.out" "$work/cg-srv.out"
	echo "+ [callgrind $side] uiwarp-perf --lat -t send -S 8 -n $n --$mode" >&2
	$vg --callgrind-out-file="$work/cg-srv.out" "$perf" -s -p "$port" \
		>"$work/cg-srv.log" 2>&1 &
	srvpid=$!
	# valgrind's start can take seconds on a loaded machine
	if ! { wait_listen "$port" || wait_listen "$port" || wait_listen "$port"; } ||
	   ! timeout 900 $vg \
		--callgrind-out-file="$work/cg-cli.out" "$perf" -c 127.0.0.1 \
		-p "$port" --lat -t send -S 8 -n "$n" "--$mode" --csv \
		>"$work/cg-cli.log" 2>&1; then
		echo "$side callgrind $mode $n: failed: client: $(grep -v '^==' "$work/cg-cli.log" | tr '\n' ' ')" \
			"server: $(grep -v '^==' "$work/cg-srv.log" | tr '\n' ' ')" >>"$work/failed"
		kill "$srvpid" 2>/dev/null || true
		wait "$srvpid" 2>/dev/null || true
		srvpid=
		return 0
	fi
	wait "$srvpid" 2>/dev/null || true
	srvpid=
	echo "$side $mode $n client $(cg_sum "$work/cg-cli.out" "$root")" >>"$work/cg"
	echo "$side $mode $n server $(cg_sum "$work/cg-srv.out" "$root")" >>"$work/cg"
}
: >"$work/cg"
if [ "$cg" = 1 ]; then
	for mode in event poll; do
		tries=1
		[ "$mode" = event ] || tries=$cg_poll_runs
		for _ in $(seq "$tries"); do
			for side in before after; do
				cg_run "$side" "$mode" "$cg_n1"
				cg_run "$side" "$mode" "$cg_n2"
			done
		done
	done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
t_end=$(date +%s)

# ---- the report -------------------------------------------------------------
# Per (kind, test, size): each side's median, min and max over the rounds
# and its median ratio to raw TCP; raw TCP's median, min and max over
# every run of both sides.  Flag: after worse than before by more than
# the larger of the two sides' spreads (max - min), or better by more.
awk '
	# the median of a[1..k] (the mean of the middle two for even k)
	function med(a, k,   i, j, t) {
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ k = $1 SUBSEP $2 SUBSEP $3
	  if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
	  n[k, $4]++; v[k, $4, n[k, $4]] = $6; q[k, $4, n[k, $4]] = $8
	  if ($7 != "-") { nt[k]++; t[k, nt[k]] = $7 } }
	END {
		for (i = 1; i <= nk; i++) {
			k = keys[i]; split(k, p, SUBSEP)
			line = p[1] " " p[2] " " p[3]
			for (s = 1; s <= 2; s++) {
				sd = s == 1 ? "before" : "after"
				m = n[k, sd]
				if (!m) { line = line " - - - -"; continue }
				lo = hi = v[k, sd, 1]
				for (j = 1; j <= m; j++) {
					a[j] = v[k, sd, j]; b[j] = q[k, sd, j]
					if (a[j] < lo) lo = a[j]
					if (a[j] > hi) hi = a[j]
				}
				line = line " " med(a, m) " " lo " " hi " " med(b, m)
			}
			m = nt[k]
			if (m) {
				lo = hi = t[k, 1]
				for (j = 1; j <= m; j++) {
					a[j] = t[k, j]
					if (a[j] < lo) lo = a[j]
					if (a[j] > hi) hi = a[j]
				}
				line = line " " med(a, m) " " lo " " hi
			} else
				line = line " - - -"
			print line
		}
	}' "$work/runs" >"$work/agg"
# agg: kind test size bmed bmin bmax bvs amed amin amax avs tmed tmin tmax

# table KIND TEST: the Markdown table of one test.
table() {
	awk -v kind="$1" -v test="$2" '
		function sz(s) { return s >= 1048576 ? s / 1048576 " MiB" : s >= 1024 ? s / 1024 " KiB" : s " B" }
		function f(x) { return x == "-" ? "-" : kind == "bw" ? sprintf("%.0f", x) : sprintf("%.2f", x) }
		function r(x) { return x == "-" ? "-" : sprintf("%.2f", x) }
		$1 == kind && (test == "" || $2 == test) {
			name = kind == "bw" ? sz($3) : $2
			if ($4 == "-" || $8 == "-") { flag = "no figure" ; ratio = "-" }
			else {
				ratio = $4 > 0 ? sprintf("%.3f", $8 / $4) : "-"
				spread = $6 - $5; if ($10 - $9 > spread) spread = $10 - $9
				worse = kind == "bw" ? $4 - $8 : $8 - $4
				flag = worse > spread ? "**worse beyond spread**" : \
				       -worse > spread ? "better beyond spread" : "within spread"
			}
			printf "| %s | %s | %s–%s | %s | %s–%s | %s (%s–%s) | %s | %s | %s | %s |\n",
				name, f($4), f($5), f($6), f($8), f($9), f($10),
				f($12), f($13), f($14), ratio, r($7), r($11), flag
		}' "$work/agg"
}

# cg table: per side, mode, role: the per-message figures of each
# revision, from the N1 and N2 runs.
awk -v n1="$cg_n1" -v n2="$cg_n2" '
	# of several runs at one count, the one with the fewest instructions
	{ k = $1 SUBSEP $2 SUBSEP $4
	  if (have[k, $3] && $5 >= c[k, $3, 5]) next
	  for (i = 5; i <= NF; i++) c[k, $3, i] = $i; have[k, $3] = 1 }
	END {
		split("event poll", modes, " "); split("client server", roles, " ")
		for (mi = 1; mi <= 2; mi++)
		for (ri = 1; ri <= 2; ri++) {
			line = modes[mi] " " roles[ri]
			for (si = 1; si <= 2; si++) {
				sd = si == 1 ? "before" : "after"
				k = sd SUBSEP modes[mi] SUBSEP roles[ri]
				if (!have[k, n1] || !have[k, n2]) {
					line = line " - - - - - - - -"; continue
				}
				for (i = 5; i <= 13; i++)
					d[i] = (c[k, n2, i] - c[k, n1, i]) / (n2 - n1)
				# ir lib crc qsort lock trylock unlock condlock cq_poll
				line = line sprintf(" %.0f %.0f %.0f %.0f %.2f %.2f %.2f %.2f", d[5], d[6], d[7], d[8],
					d[11], d[9], d[10], d[13])
			}
			print line
		}
	}' "$work/cg" >"$work/cgagg"
# cgagg: mode role | before: ir lib crc qsort unlock lock trylock cq_poll | after: the same

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == 0) print "-"; else printf "%+.1f %%", (b - a) / a * 100 }'; }

cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
{
	echo "# uiwarp A/B: before against after"
	echo
	if [ "$before_sha" = "$after_sha" ] && [ "$after_rev" != worktree ]; then
		echo "**Both sides are the same commit: a trial of the method; the ratios"
		echo "should be near 1 and every difference is noise.**"
		echo
	fi
	if awk -v a="${load_before%% *}" -v b="${load_after%% *}" -v n="$(nproc)" \
		'BEGIN { exit !(a > n || b > n) }'; then
		echo "**The load average was above the number of CPUs: other work"
		echo "shared them, and the timed figures say more about it than about"
		echo "uiwarp (the callgrind counts do not depend on it).**"
		echo
	fi
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- before: $before_desc (AB_BEFORE=$before_rev)"
	echo "- after: $after_desc (AB_AFTER=$after_rev)"
	echo "- machine: $(uname -srm), $(nproc) CPUs, ${cpu:-unknown CPU}"
	echo "- load average: $load_before before the run, $load_after after"
	echo "- the run took $(((t_end - t_start) / 60)) min $(((t_end - t_start) % 60)) s (builds included)"
	echo "- builds: RelWithDebInfo (-O2 -g), each revision's own tools/uiwarp-perf.c"
	echo "- settings: $rounds rounds; throughput ${secs} s per figure at $(echo "$sizes" | tr ' ' ',')" \
		"(tests $tests, depth 16, 1 QP, CRC on, event completions);" \
		"latency $lat_iters 8-octet ping-pongs per run (--poll, CRC on);" \
		"callgrind at $cg_n1 and $cg_n2 ping-pongs (--poll: best of $cg_poll_runs)$([ "$quick" = 1 ] && echo ' (AB_QUICK=1)')"
	echo
	echo "## Method"
	echo
	echo "Each revision is exported (git archive) and built apart under"
	echo "\`build-ab/\`.  In every round, size by size, the two builds' uiwarp-perf"
	echo "run one after the other (\`--loopback --tcp\`: both ends in one"
	echo "process over 127.0.0.1, and raw TCP taking turns with uiwarp inside"
	echo "the same invocation); which side goes first alternates from round to"
	echo "round.  A figure is the median over the rounds; \"min–max\" is its"
	echo "spread over the rounds; raw TCP is the median (and spread) over every"
	echo "run of both sides.  \"after/before\" is after's median over before's"
	echo "(throughput: above 1 is better; latency: below 1 is better).  \"vs TCP\""
	echo "is the median over the rounds of each run's own ratio to the raw TCP"
	echo "measured in turns with it.  The last column says \"worse beyond"
	echo "spread\" when after's median is worse than before's by more than the"
	echo "larger of the two sides' spreads (max − min), \"better beyond spread\""
	echo "for the reverse; with few rounds the spread is itself a rough"
	echo "figure.  A benchmark: nothing here fails for being slow."
	echo
	echo "## Throughput (MB/s = 10^6 payload octets per second)"
	for t in $(echo "$tests" | tr ',' ' '); do
		echo
		echo "### $t"
		echo
		echo "| size | before | before min–max | after | after min–max | raw TCP (min–max) | after/before | before vs TCP | after vs TCP | flag |"
		echo "|-----:|-------:|---------------:|------:|--------------:|------------------:|-------------:|--------------:|-------------:|------|"
		table bw "$t"
	done
	echo
	echo "## 8-octet ping-pong (median half round trip, µs; --poll)"
	echo
	echo "| test | before | before min–max | after | after min–max | raw TCP (min–max) | after/before | before vs TCP | after vs TCP | flag |"
	echo "|------|-------:|---------------:|------:|--------------:|------------------:|-------------:|--------------:|-------------:|------|"
	table lat ""
	echo
	echo "## Cost per 8-octet Send ping-pong (callgrind)"
	echo
	echo "A server (\`uiwarp-perf -s\`) and a client (\`uiwarp-perf -c 127.0.0.1"
	echo "--lat -t send -S 8\`) process over 127.0.0.1, each under"
	echo "\`valgrind --tool=callgrind\` for the whole program, once with"
	echo "$cg_n1 and once with $cg_n2 ping-pongs; each figure is"
	echo "(count($cg_n2) − count($cg_n1)) / $((cg_n2 - cg_n1)), so setup and"
	echo "teardown cancel out.  Per ping-pong each side posts one Send and"
	echo "receives one: the client sends the ping and waits for the pong, the"
	echo "server echoes.  Instructions: every user-space instruction of the"
	echo "process (all threads; the kernel is not counted); \"uiwarp code\":"
	echo "those in functions of the library's src/; \"CRC\": the CRC32c of MPA"
	echo "(src/wire/crc32c.c, part of \"uiwarp code\", or ISA-L's crc32_iscsi"
	echo "where it is used); \"qsort\": the client sorting its latency samples at the"
	echo "end (the tool, not the engine; it grows as n·log n, so it does not"
	echo "cancel out entirely).  Lock pairs: calls to pthread_mutex_unlock,"
	echo "one per acquisition that succeeded (pthread_mutex_lock, a successful"
	echo "pthread_mutex_trylock, or a condition variable's wait taking its"
	echo "mutex back); trylock: the calls to pthread_mutex_trylock, successful"
	echo "or not.  \`--event\` sleeps on the CQ's fd (one run per count; the"
	echo "per-ping-pong figures repeat to 0.1 per cent, now and then to 1 per"
	echo "cent, as the progress thread finds one message or two at a wake-up);"
	echo "\`--poll\` spins on uiw_cq_poll and"
	echo "yields, so its counts include the empty polls, as many as the"
	echo "scheduler makes (a stall can multiply them): each count is taken"
	echo "$cg_poll_runs times and the run with the fewest instructions kept;"
	echo "even so the \`--poll\` rows move by several per cent from run to"
	echo "run, and only the \`--event\` rows compare two revisions closely."
	echo
	echo "### Instructions per ping-pong"
	echo
	echo "| completion | process | before | after | change | uiwarp code before | after | CRC before | after | qsort before | after |"
	echo "|------------|---------|-------:|------:|-------:|-------------------:|------:|-----------:|------:|-------------:|------:|"
	while read -r mode role b_ir b_lib b_crc b_qs _ _ _ _ a_ir a_lib a_crc a_qs _ _ _ _; do
		echo "| $mode | $role | $b_ir | $a_ir | $(pct "$b_ir" "$a_ir") | $b_lib | $a_lib | $b_crc | $a_crc | $b_qs | $a_qs |"
	done <"$work/cgagg"
	echo
	echo "### Locks per ping-pong"
	echo
	echo "| completion | process | lock pairs before | after | change | trylock before | after | uiw_cq_poll before | after |"
	echo "|------------|---------|------------------:|------:|-------:|---------------:|------:|-------------------:|------:|"
	while read -r mode role _ _ _ _ b_un _ b_tl b_cq _ _ _ _ a_un _ a_tl a_cq; do
		echo "| $mode | $role | $b_un | $a_un | $(pct "$b_un" "$a_un") | $b_tl | $a_tl | $b_cq | $a_cq |"
	done <"$work/cgagg"
	[ "$cg" = 1 ] || echo "(left out: AB_CG=0 or no valgrind)"
	echo
	echo "Raw counts (process, completion, ping-pongs: instructions, uiwarp code,"
	echo "CRC, qsort, pthread_mutex_lock, _trylock, _unlock,"
	echo "__pthread_mutex_cond_lock, uiw_cq_poll calls):"
	echo
	awk '{ printf "    %-6s %-6s %-5s %6d: %s %s %s %s %s %s %s %s %s\n", $1, $4, $2, $3, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$work/cg"
	if [ -s "$work/failed" ]; then
		echo
		echo "## Runs that failed (left out of the figures)"
		echo
		sed 's/^/- /' "$work/failed"
	fi
} >"$work/report.md"
mkdir -p "$(dirname "$out")"
mv "$work/report.md" "$out"
cat "$out"
