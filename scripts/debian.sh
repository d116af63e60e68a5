# Sourced by the scripts that install what the tests use from Debian's packages:
# `debian_install WHY PACKAGE…` installs the packages (without their recommendations),
# refreshing the package lists once per run, and stops with a message saying WHY they
# were needed if it cannot: a test never skips for want of them.

debian_install() {
    local why=$1
    shift
    echo "installing $* ($why)" >&2
    if [ -z "${EVO_APT_UPDATED:-}" ]; then
        if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2; then
            echo "error: could not refresh Debian's package lists to install $* ($why)" >&2
            exit 1
        fi
        EVO_APT_UPDATED=1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2; then
        echo "error: could not install $* ($why)" >&2
        exit 1
    fi
}
