# Shell helpers for interop tests; source this file (bash).
#
#   source "$src/tests/interop/guest.sh"
#   guest_setup "$build"            # builds the guest once (cached), makes a
#                                   # run directory: $GUEST_RUN, $GUEST_CACHE
#   trap guest_stop EXIT
#   read -r P Q <<< "$(guest_free_ports 2)"
#   guest_start --hostfwd "$P" --guestfwd "$Q"   # boots, waits for siw0
#   guest_run -t 30 ibv_devices                  # output; the guest's status
#   guest_bg srv rping -s -a 10.0.2.15 -p "$P" -C 1 -v
#   guest_wait_listen "$P"
#   ... host side connects to 127.0.0.1:$P ...
#   guest_bg_wait srv -t 30                      # output; the job's status
#   guest_stop
#
# The guest stops by itself when the shell that called guest_start exits.
# A status of 255 from these functions means the harness failed (the
# reason is on stderr, with the end of the guest's console).

UIW_INTEROP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# No __pycache__ in the source tree.
export PYTHONDONTWRITEBYTECODE=1
# The guest's address, and the address at which it reaches the host.
export GUEST_ADDR=10.0.2.15
export GUEST_HOST_ADDR=10.0.2.100

guest_py() {
	python3 "$UIW_INTEROP_DIR/guest.py" "$@"
}

# guest_setup BUILD_DIR [CACHE]
guest_setup() {
	local build=${1:?guest_setup: build directory}
	GUEST_CACHE=${2:-$build/interop-cache}
	bash "$UIW_INTEROP_DIR/build-guest.sh" "$GUEST_CACHE" || return 1
	mkdir -p "$build"
	GUEST_RUN=$(mktemp -d "$build/interop-run.XXXXXX") || return 1
	export GUEST_RUN GUEST_CACHE
}

# guest_start [--hostfwd H[:G]]... [--guestfwd G[:H]]... [--timeout S] ...
guest_start() {
	guest_py start --run "$GUEST_RUN" --cache "$GUEST_CACHE" --owner $$ "$@"
}

# guest_run [-t SECONDS] CMD...: prints the output, returns its status
guest_run() {
	guest_py run --run "$GUEST_RUN" "$@"
}

# guest_bg NAME CMD...: starts a background job in the guest
guest_bg() {
	guest_py bg-start --run "$GUEST_RUN" "$@"
}

# guest_bg_wait NAME [-t SECONDS]: prints its output, returns its status
# (124: still running)
guest_bg_wait() {
	guest_py bg-wait --run "$GUEST_RUN" "$@"
}

# guest_bg_kill NAME [SIGNAL]
guest_bg_kill() {
	guest_py bg-kill --run "$GUEST_RUN" "$@"
}

# guest_wait_listen PORT [-t SECONDS]: waits for a TCP listener in the guest
guest_wait_listen() {
	guest_py wait-listen --run "$GUEST_RUN" "$@"
}

guest_restart() {
	guest_py restart --run "$GUEST_RUN" "$@"
}

# guest_status: prints running / crashed: LINE / stopped
guest_status() {
	guest_py status --run "$GUEST_RUN"
}

guest_console() {
	guest_py console --run "$GUEST_RUN" "$@"
}

guest_stop() {
	[ -n "${GUEST_RUN:-}" ] && [ -f "$GUEST_RUN/config.json" ] || return 0
	guest_py stop --run "$GUEST_RUN"
}

# guest_free_ports N: N free loopback TCP ports
guest_free_ports() {
	guest_py free-ports "$1"
}
