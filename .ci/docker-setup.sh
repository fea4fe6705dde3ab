#!/usr/bin/env bash
# CI's Docker engine for the kind end-to-end test (tests/kind): Debian's docker.io, and dockerd started
# with this sandbox's one need — a runc wrapper (.ci/runc-drop-caps) as its default runtime, because the
# host's capability bounding set lacks CAP_SYS_RESOURCE and privileged containers (kind's nodes) ask for it.
# Idempotent: does nothing when a Docker engine already answers. Needs root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if docker info >/dev/null 2>&1; then
  echo "docker-setup: a Docker engine already answers ($(docker info --format '{{.ServerVersion}}'))"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "docker-setup: needs root to install and start dockerd" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "docker-setup: installing docker.io and debootstrap (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi

install -m 0755 "$here/runc-drop-caps" /usr/local/sbin/runc-drop-caps
mkdir -p /etc/docker
cat >/etc/docker/daemon.json <<JSON
{
  "runtimes": {"runc-drop-caps": {"path": "/usr/local/sbin/runc-drop-caps"}},
  "default-runtime": "runc-drop-caps"
}
JSON
echo "docker-setup: starting dockerd (log: /var/log/kailab-ci-dockerd.log)"
setsid nohup dockerd >/var/log/kailab-ci-dockerd.log 2>&1 </dev/null &
for _ in $(seq 60); do
  if docker info >/dev/null 2>&1; then
    echo "docker-setup: dockerd $(docker info --format '{{.ServerVersion}}') answers (default runtime runc-drop-caps)"
    exit 0
  fi
  sleep 1
done
echo "docker-setup: dockerd did not answer in 60 s; its log:" >&2
tail -30 /var/log/kailab-ci-dockerd.log >&2
exit 1
