#!/usr/bin/env bash
# apt-ensure.sh WHO PACKAGE...: installs the Debian packages that are not
# installed yet (noninteractive, without recommends); does nothing when
# all are present.  Installing needs root; WHO names the caller in the
# messages.
set -euo pipefail
who=${1:?usage: apt-ensure.sh WHO PACKAGE...}
shift
missing=()
for p in "$@"; do
	case $(dpkg-query -W -f='${Status} ' "$p" 2>/dev/null) in
	*'install ok installed'*) ;;
	*) missing+=("$p") ;;
	esac
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "$who: missing packages: ${missing[*]} (run as root)" >&2
	exit 1
fi
echo "$who: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, quietly.
echo "wireshark-common wireshark-common/install-setuid boolean false" |
	debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
