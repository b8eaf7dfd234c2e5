#!/bin/bash
# compile-or-cannot-lower.sh TMPDIR FILE...: for each HLO file, one line:
#   NAME: compiled, matches the reference     tpuc compiled it and tpusim --check --strict passed
#   NAME: <tpuc's error line>                 tpuc refused it with a clear error (exit status 1)
#   NAME: FAIL ... / CRASH ...                anything else (the caller's FileCheck rejects it)
tmp=$1
shift
for f in "$@"; do
  name=$(basename "$f")
  tpuc "$f" -o "$tmp/$name.tpuprog" > /dev/null 2> "$tmp/$name.err"
  rc=$?
  if [ $rc -eq 0 ]; then
    if tpusim "$f" --check --strict --quiet > "$tmp/$name.sim" 2>&1; then
      echo "$name: compiled, matches the reference"
    else
      echo "$name: FAIL: compiled but tpusim --check --strict failed: $(grep -E 'error|MISMATCH' "$tmp/$name.sim" | head -2 | tr '\n' ' ')"
    fi
  elif [ $rc -eq 1 ]; then
    echo "$name: $(grep -m1 'error:' "$tmp/$name.err")"
  else
    echo "$name: CRASH: tpuc exit status $rc: $(tail -1 "$tmp/$name.err")"
  fi
done
