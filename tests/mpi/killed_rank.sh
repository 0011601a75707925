#!/bin/sh
# Runs a launcher command line whose last rank kills itself mid-execute and
# passes when every other rank printed "survivor rank R: PASS". The
# launcher's own exit status is not looked at: it reports the killed rank.
# Usage: killed_rank.sh <ranks> <launcher command...>
ranks="$1"
shift
output=$("$@" 2>&1)
echo "$output"
survivors=$(echo "$output" | grep -c "^survivor rank [0-9]*: PASS")
if [ "$survivors" -eq $((ranks - 1)) ]; then
  echo "killed rank: all $survivors survivors ended in an error within the timeout"
  echo "1 passed, 0 failed"
  exit 0
fi
echo "killed rank: $survivors of $((ranks - 1)) survivors passed"
echo "0 passed, 1 failed"
exit 1
