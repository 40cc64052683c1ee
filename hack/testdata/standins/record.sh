# shellcheck shell=sh
# Sourced by every stand-in: records the call (its name and arguments, one line) in $STANDIN_LOG, and fails it
# when $STANDIN_FAIL is a substring of that line.
call="$(basename "$0") $*"
printf '%s\n' "$call" >>"$STANDIN_LOG"
if [ -n "${STANDIN_FAIL:-}" ]; then
  case $call in
    *"$STANDIN_FAIL"*) echo "stand-in: $call fails as asked" >&2; exit 1 ;;
  esac
fi
