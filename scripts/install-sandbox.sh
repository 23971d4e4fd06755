#!/usr/bin/env bash
# Install what the grader's jail needs (grader/sandbox/jail.py), with the system package manager.
#
#   scripts/install-sandbox.sh              # bubblewrap: the strong tier ("bwrap")
#   scripts/install-sandbox.sh --uid-tier   # also prepare the fallback tier ("uid", root only)
#
# bubblewrap is Debian/Ubuntu's `bubblewrap`, Fedora's `bubblewrap`, Alpine's `bubblewrap`.
# The "uid" tier runs student code as an unprivileged uid; it needs the Python runtime to be
# reachable by other users and the kit NOT to be (`grader run --sandbox=uid` says which).
# --uid-tier makes it so: o+x (search, not list) on the directories above the Python
# runtime, and o-rwx on this checkout. With a virtual environment inside the checkout (as
# the starter README prescribes: `python -m venv .venv`), the checkout stays o+x (search
# only, so that the venv below it can be reached), the venv readable by all, and every
# other entry of the checkout (the kit's sources, .git, build leftovers) o-rwx: the venv's
# editable install then points at folders the jail's uid cannot open. It changes
# permissions on this machine: meant for CI machines and grading containers, not for a
# laptop you share.
set -euo pipefail
cd "$(dirname "$0")/.."

need_root() { if [ "$(id -u)" -ne 0 ]; then echo "run as root (or with sudo): $*" >&2; exit 1; fi; }

if ! command -v bwrap >/dev/null 2>&1; then
    need_root "installing bubblewrap"
    if command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null; }
    elif command -v dnf >/dev/null; then dnf install -y -q bubblewrap
    elif command -v apk >/dev/null; then apk add --no-cache bubblewrap
    else echo "install bubblewrap with your package manager" >&2; exit 1
    fi
fi
echo "bubblewrap: $(bwrap --version)"

if [ "${1:-}" = "--uid-tier" ] && [ "$(id -u)" -ne 0 ]; then
    echo "not root: the uid tier is not prepared (it needs a grader running as root)"
elif [ "${1:-}" = "--uid-tier" ]; then
    checkout="$(pwd -P)"
    prefix="$(cd "$(python -c 'import sys; print(sys.prefix)')" && pwd -P)"
    for top in "$(python -c 'import sys; print(sys.base_prefix)')" "$prefix"; do
        d="$top"
        while [ "$d" != "/" ]; do
            d="$(dirname "$d")"
            perms="$(stat -c %A "$d")"
            if [ "${perms:9:1}" != "x" ] && [ "${perms:9:1}" != "t" ]; then chmod o+x "$d" && echo "o+x $d (the Python runtime lies below it)"; fi
        done
    done
    case "$prefix/" in
        "$checkout"/*)  # a venv inside the checkout: the way to it open, nothing else
            venv_top="$checkout/$(printf '%s' "${prefix#"$checkout"/}" | cut -d/ -f1)"
            chmod o-rw,o+x . && echo "o=x $checkout (search only: the venv $venv_top lies below it)"
            for entry in .[!.]* ..?* *; do
                [ -e "$entry" ] || [ -L "$entry" ] || continue
                if [ "$checkout/$entry" = "$venv_top" ]; then
                    chmod -R o+rX "$entry" && echo "o+rX $checkout/$entry (the venv: the jail's Python runs from it)"
                elif [ ! -L "$entry" ]; then
                    chmod o-rwx "$entry"
                fi
            done
            echo "o-rwx every other entry of $checkout (the kit: unreadable to the jail's uid)" ;;
        *)
            chmod o-rwx . && echo "o-rwx $(pwd) (the kit: unreadable to the jail's uid)" ;;
    esac
fi
python -c 'from grader.sandbox.tiers import tier_reasons
for tier, why in tier_reasons().items():
    print("  %-8s %s" % (tier, why or "available"))' 2>/dev/null || echo "(install the kit to see which tiers this machine provides)"
