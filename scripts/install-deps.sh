#!/bin/sh
# Installs what building memdiff and its tests needs on Debian/Ubuntu: a C compiler, CMake,
# pkg-config, Check (tests only), uthash (a header), python3 (CI's layer check), groff-base
# (the tests render the man page) and the JSON schema check's validator and jq
# (python3-jsonschema, jq: tests/json_schema_check.py). Uses sudo when not root.
set -eu
pkgs="build-essential cmake pkg-config check uthash-dev python3 groff-base python3-jsonschema jq"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
