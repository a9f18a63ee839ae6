#!/usr/bin/env bash
# Installs everything Respawn's demo and tests need on a fresh Debian machine:
# Slurm + munge + OpenSSH + PostgreSQL from Debian, and a virtualenv at .venv with the
# `respawn` command. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(slurm-wlm munge postgresql openssh-server openssh-client procps util-linux prometheus chromium podman runc debootstrap catatonit)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
stamp=.venv/.installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -e '.[workload,test]'
  touch "$stamp"
fi
# The worker's sandbox imports workflows/incident.py afresh for every incident. Where Python
# writes no bytecode (PYTHONDONTWRITEBYTECODE, as in CI and many images) the editable install
# compiled it again each time: 9 ms of the worker's interpreter an incident, 7 % of it in a
# storm (BENCHMARKS.md, "A failure storm", run 21). A wheel carries its bytecode (pip compiles
# it); the tree gets it here (compileall skips what is current, and does not follow the
# symlinks inside respawn/, so the linked folders are named).
.venv/bin/python -m compileall -q respawn activities workflows workers >/dev/null
