#!/usr/bin/env bash
# One entry point for every tool of the automation benchmark:
#   benchmarks/automation/run.sh --url BASE --tool NAME --runs N [--start I] [driver options]
# prints one JSON line per run: {"tool","run","ok","error","ms"}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=""
args=("$@")
for ((k = 0; k < ${#args[@]}; k++)); do
  [[ "${args[k]}" == "--tool" ]] && tool="${args[k + 1]:-}"
done
case "$tool" in
  headless-new | headless-old | headless-desktop-ua | headless-no-automation-controlled)
    exec node "$here/drivers/headless.mjs" "$@" ;;
  playwright | puppeteer | puppeteer-stealth | firefox-headless)
    exec node "$here/drivers/cdp.mjs" "$@" ;;
  selenium)
    exec python3 "$here/drivers/selenium_run.py" "$@" ;;
  human-chromium | human-firefox)
    exec python3 "$here/drivers/human.py" "$@" ;;
  *)
    echo "unknown --tool '$tool'; one of: headless-new headless-old headless-desktop-ua headless-no-automation-controlled selenium playwright puppeteer puppeteer-stealth firefox-headless human-chromium human-firefox" >&2
    exit 2 ;;
esac
