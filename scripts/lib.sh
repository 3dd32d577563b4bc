# scripts/lib.sh: shared set-up for scripts/demo, scripts/test, scripts/bench.
# Sourced, not run.  ensure_deps installs the Debian packages corotop needs
# when they are missing (as root directly, else through sudo -n), and when it
# can not, prints the exact command to run and exits 1.

COROTOP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Packages every build needs; callers may append more.
# Boost.Context, Boost.Fiber and Boost.Coroutine (boost::asio::spawn): the
# programs the preload tests trace.
# corotop serve's --web-config: libyaml (the file), libcrypt (bcrypt) and
# GnuTLS (libmicrohttpd's TLS).  libdebuginfod: a stripped program's debug
# info from the servers DEBUGINFOD_URLS names.
COROTOP_PKGS=(meson ninja-build pkg-config gcc g++ python3
	libncurses-dev libev-dev libcmocka-dev libdw-dev libiberty-dev tmux
	libdebuginfod-dev
	libboost-context-dev libboost-fiber-dev libboost-coroutine-dev
	libzstd-dev
	libmicrohttpd-dev libyaml-dev libcrypt-dev libgnutls28-dev)
# What scripts/test needs on top: the e2e consumer checks fetch the
# speedscope npm package (npm pack) and validate against its schema
# (python3-jsonschema).  An npm that is already there (NodeSource's nodejs
# ships one, and conflicts with Debian's npm) is used as it is.  Chromium,
# for the render check, is left out on purpose (too big); that test skips
# without it.  corotop serve's consumers: Prometheus itself (the e2e test
# scrapes with it; promtool checks the 0.0.4 text) and the Python client's
# strict parsers (python3-prometheus-client).
# openssl makes the certificate the --web-config test serves with.
# debuginfod: the server e2e-debuginfod names a stripped program through;
# binutils (objcopy, strip) makes that program.
# gdb: gcore takes the core files e2e-core opens with corotop --core.
COROTOP_TEST_PKGS=(python3-jsonschema prometheus python3-prometheus-client
	openssl debuginfod binutils gdb)
command -v npm >/dev/null 2>&1 || COROTOP_TEST_PKGS+=(npm)

ensure_deps() {
	local missing=() p
	if ! command -v dpkg-query >/dev/null 2>&1; then
		for p in meson ninja pkg-config cc; do
			command -v "$p" >/dev/null 2>&1 || {
				echo "corotop: '$p' is missing; install meson, ninja, pkg-config, a C compiler, ncurses, libev, cmocka, elfutils libdw and libdebuginfod, and libiberty" >&2
				exit 1
			}
		done
		return 0
	fi
	for p in "${COROTOP_PKGS[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "corotop: installing missing packages: ${missing[*]}" >&2
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			echo "corotop: cannot install packages without root. Run:" >&2
			echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
			exit 1
		fi
	fi
	if ! { "${sudo[@]}" apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"; } >&2; then
		echo "corotop: apt-get failed. Run:" >&2
		echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
}

# What corotop needs at run time, as ninja targets: the binary, and the
# preload library `corotop -- PROGRAM` traces an unmodified program with
# (it pulls in the probe library it links).  scripts/demo builds these.
COROTOP_RUN_TARGETS=(corotop src/preload/libcorotop-preload.so)

# configure DIR [meson options...]: set up DIR once, reconfigure if it exists.
configure() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$COROTOP_ROOT" "$@" >/dev/null
	fi
}
