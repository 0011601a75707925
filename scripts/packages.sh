#!/usr/bin/env bash
# Sourced by the scripts that build Weave: weave_install_packages PACKAGE...
# installs the Debian packages of the list that are missing (apt-get, as
# root or via sudo). WEAVE_SKIP_INSTALL=1: never call apt-get; report the
# missing packages and fail instead.

weave_install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "${WEAVE_SKIP_INSTALL:-0}" = 1 ]; then
    echo "weave: missing Debian packages: ${missing[*]} (WEAVE_SKIP_INSTALL=1, not installing)" >&2
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "weave: install as root: apt-get install ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  echo "weave: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
}
