#!/usr/bin/env bash
# The screenshots in docs/report.md: the HTML reports of the built-in bursty world and of
# multi_vendor (three strategies, so its timelines show a router, a hedger and AIMD), loaded
# and checked in headless Chromium by the browser test's own script, saved under docs/img/.
#   scripts/screenshots.sh        (needs Debian's chromium: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/simbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" run --seeds 3 --html "$tmp/bursty.html" --json "$tmp/bursty.json" --quiet
"$bin" run scenarios/multi_vendor.toml --algorithms router,hedged,aimd --seeds 3 \
  --html "$tmp/multi_vendor.html" --json "$tmp/multi_vendor.json" --quiet
"$bin" sweep --concurrency 2,4,8,16,32 --seeds 3 --html "$tmp/sweep.html" --quiet
mkdir -p docs/img
python3 tests/browser/check_html.py "${CHROMIUM:-chromium}" docs/img \
  "$tmp/bursty.html" "$tmp/bursty.json" "$tmp/multi_vendor.html" "$tmp/multi_vendor.json"
"${CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1280,1250 --screenshot=docs/img/sweep.png "file://$tmp/sweep.html" 2>/dev/null
ls -l docs/img
