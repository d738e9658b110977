# Shared part of the demonstrations (scripts/demo.sh, scripts/demo-nfs.sh);
# sourced, not run.
#
#   title TEXT      a heading, bold on a terminal
#   indent [FILE]   FILE (or standard input) indented by four spaces
#   $bold $plain    the terminal's bold and plain (empty elsewhere)

bold=
plain=
if [ -t 1 ]; then
	bold=$(printf '\033[1m')
	plain=$(printf '\033[0m')
fi
title() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$plain"; }
indent() { sed 's/^/    /' "$@"; }
